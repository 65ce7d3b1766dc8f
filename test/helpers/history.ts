import type { HistoryRow } from "../../src/core/compaction/index.js";

/** Builds stored-row histories for compaction tests and benchmarks. */
export class HistoryBuilder {
  readonly rows: HistoryRow[] = [];
  private calls = 0;

  private push(row: Omit<HistoryRow, "id" | "seq" | "thinking" | "tool_calls" | "tool_call_id" | "meta"> & Partial<HistoryRow>): HistoryRow {
    const seq = this.rows.length + 1;
    const full: HistoryRow = { id: `msg_${seq}`, seq, thinking: null, tool_calls: null, tool_call_id: null, meta: null, ...row };
    this.rows.push(full);
    return full;
  }

  user(content: string, meta: Record<string, unknown> | null = null): HistoryRow {
    return this.push({ role: "user", content, meta });
  }

  assistant(content: string): HistoryRow {
    return this.push({ role: "assistant", content });
  }

  /** An assistant message with one tool call per output, and the tool rows answering them. */
  toolTurn(name: string, outputs: string[], args: (i: number) => object = (i) => ({ file: `/src/file${this.calls + i}.ts` })): HistoryRow[] {
    const calls = outputs.map((_, i) => ({ id: `call_${this.calls + i}`, name, arguments: JSON.stringify(args(i)) }));
    this.calls += outputs.length;
    const assistant = this.push({ role: "assistant", content: null, thinking: "deciding what to read", tool_calls: calls });
    const results = outputs.map((output, i) => this.push({ role: "tool", content: output, tool_call_id: calls[i]!.id, meta: { toolName: name } }));
    return [assistant, ...results];
  }
}

/** A text of about `tokens` estimated tokens (4 ASCII bytes each). */
export function textOf(tokens: number, seed = "line"): string {
  const line = `${seed} ${"x".repeat(34)}\n`; // 40 bytes = 10 tokens
  return line.repeat(Math.max(1, Math.round(tokens / 10)));
}

/** A session: one user request, then `turns` read_file calls of `outputTokens` each, then a final answer. */
export function toolHeavyHistory(turns: number, outputTokens: number): HistoryBuilder {
  const h = new HistoryBuilder();
  h.user("Refactor the parser module and keep the tests green.");
  for (let i = 0; i < turns; i++) h.toolTurn("read_file", [textOf(outputTokens, `file${i}`)]);
  return h;
}

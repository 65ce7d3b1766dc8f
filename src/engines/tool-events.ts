import type { ToolCallRequest } from "../llm/types.js";
import type { RunEvent, RunIO, ToolCallResult } from "./types.js";

/**
 * Runs a response's tool calls in parallel through io.executeTool and yields every call's
 * events as they come, one at a time: a call's next step waits until its last event was
 * taken (and so stored). Returns the results in call order, whatever order they ended in.
 */
export async function* runToolCalls(calls: readonly ToolCallRequest[], io: Pick<RunIO, "executeTool">): AsyncGenerator<RunEvent, ToolCallResult[]> {
  const streams = calls.map((call) => io.executeTool(call)[Symbol.asyncIterator]());
  const results: (ToolCallResult | undefined)[] = calls.map(() => undefined);
  type Pulled = { index: number; next: IteratorResult<RunEvent> };
  const pending = new Map<number, Promise<Pulled>>();
  const pull = (index: number) => pending.set(index, streams[index]!.next().then((next) => ({ index, next })));
  streams.forEach((_, index) => pull(index));
  while (pending.size > 0) {
    const { index, next } = await Promise.race(pending.values());
    pending.delete(index);
    if (next.done) {
      // A broken executor that ended without a result: the call is answered, never left open.
      if (!results[index]) {
        results[index] = missingResult(calls[index]!);
        yield { type: "tool_finished", result: results[index]!, input: null };
      }
      continue;
    }
    if (next.value.type === "tool_finished") results[index] = next.value.result;
    yield next.value;
    pull(index);
  }
  return results as ToolCallResult[];
}

function missingResult(call: ToolCallRequest): ToolCallResult {
  return { call, output: "Error: INTERNAL_ERROR — the tool call ended without a result", success: false, state: "error", durationMs: 0 };
}

/**
 * The compaction modules driven the way the run loop is expected to drive them, against the
 * fake LLM over real HTTP: threshold check after every model call, compaction before the
 * next one, and on a provider's overflow answer one compaction + one retry, then CONTEXT_OVERFLOW.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  compactHistory,
  contextOverflowError,
  contextTokens,
  EMPTY_COMPACTION,
  isOverflowError,
  shouldCompact,
  SUMMARY_SYSTEM_PROMPT,
  type CompactionReason,
  type CompactionState,
  type KnownUsage,
} from "../../../src/core/compaction/index.js";
import { buildModelView } from "../../../src/core/compaction/view.js";
import { isVeilError, type VeilError } from "../../../src/errors.js";
import { createOpenAiProvider } from "../../../src/llm/openai-compatible/client.js";
import type { LlmMessage, LlmProvider, StreamEvent } from "../../../src/llm/types.js";
import { reply, startFakeLlm, type FakeLlm, type FakeRequest } from "../../helpers/fake-llm.js";
import { HistoryBuilder, textOf } from "../../helpers/history.js";

const SYSTEM = "You are a careful coding agent. Memory: the user prefers small commits.";
const REQUEST = "Read every file of the project and report what each does.";
const SETTINGS = { autoThreshold: 0.8, keepRecentTokens: 20_000 };

let llm: FakeLlm;
afterEach(async () => llm?.close());

async function finish(provider: LlmProvider, messages: LlmMessage[]): Promise<Extract<StreamEvent, { type: "done" | "error" }>> {
  let last: StreamEvent | undefined;
  for await (const event of provider.stream({ model: "m", messages })) last = event;
  return last as Extract<StreamEvent, { type: "done" | "error" }>;
}

/** The fake model: reads file N for N < calls, then answers; writes a summary when asked to. */
function scriptModel(calls: number, outputTokens: number, onCall?: (n: number) => void): void {
  let asked = 0;
  llm.respond((req: FakeRequest) => {
    onCall?.(asked);
    if (req.body.messages[0].content === SUMMARY_SYSTEM_PROMPT) {
      return reply().text(`## Goal\n${REQUEST}\n## Decisions and why\nRead files in order.\n## Files read and changed\n(${asked} files read)\n## Current state\nIn progress.\n## Open questions\nNone\n## Next steps\n1. Keep reading.`).stop();
    }
    if (asked < calls) return reply().tool("read_file", { file: `/project/file${asked++}.ts` }).stop();
    return reply().text(`Read ${asked} files.`).stop();
  });
  void outputTokens;
}

interface RunResult {
  promptSizes: number[];
  compactions: { reason: CompactionReason; tokensBefore: number; tokensAfter: number; summary: boolean }[];
  final: string | null;
  error?: VeilError;
}

/** A reference run loop: model call → tool results → threshold check → compaction before the next call. */
async function runSession(options: { window: number; outputTokens: number; autoCompact?: boolean; maxSteps?: number }): Promise<RunResult> {
  const provider = createOpenAiProvider("fake", { type: "openai", baseUrl: llm.baseUrl, apiKey: "k" }, { env: {} });
  const history = new HistoryBuilder();
  history.user(REQUEST);
  let state: CompactionState = EMPTY_COMPACTION;
  let known: KnownUsage | null = null;
  let summaries = 0;
  const result: RunResult = { promptSizes: [], compactions: [] };

  const compact = async (reason: CompactionReason, size?: number, overflowMessage?: string) => {
    const done = await compactHistory({
      reason,
      systemPrompt: SYSTEM,
      rows: history.rows,
      state,
      contextWindow: options.window,
      settings: SETTINGS,
      contextTokens: size,
      overflowMessage,
      summaryRowId: `summary_${++summaries}`,
      summarize: async (messages) => {
        const answer = await finish(provider, messages);
        if (answer.type !== "done") throw new Error(answer.error.message);
        return answer.message.content ?? "";
      },
    });
    state = done.state;
    known = null; // the view changed: the next size is an estimate until the provider measures it
    result.compactions.push({ reason, tokensBefore: done.tokensBefore, tokensAfter: done.tokensAfter, summary: done.summary !== null });
  };

  for (let step = 0; step < (options.maxSteps ?? 1000); step++) {
    let view = buildModelView(SYSTEM, history.rows, state);
    let answer = await finish(provider, view);
    if (answer.type === "error" && isOverflowError(answer.error)) {
      await compact("overflow", undefined, answer.error.message);
      view = buildModelView(SYSTEM, history.rows, state);
      answer = await finish(provider, view);
      if (answer.type === "error" && isOverflowError(answer.error)) {
        result.error = contextOverflowError({ modelKey: "fake/m", contextWindow: options.window, promptTokens: contextTokens(view), providerMessage: answer.error.message });
        return result;
      }
    }
    if (answer.type === "error") throw new Error(answer.error.message);
    result.promptSizes.push(answer.usage.prompt_tokens);
    known = { promptTokens: answer.usage.prompt_tokens, completionTokens: answer.usage.completion_tokens, messageCount: view.length };
    const calls = answer.message.toolCalls;
    if (calls.length === 0) {
      result.final = answer.message.content;
      return result;
    }
    history.toolTurn("read_file", calls.map((_, i) => textOf(options.outputTokens, `file${step}.${i}`)), () => JSON.parse(calls[0]!.arguments));
    if (options.autoCompact === false) continue;
    const size = contextTokens(buildModelView(SYSTEM, history.rows, state), known);
    if (shouldCompact(size, options.window, SETTINGS.autoThreshold)) await compact("auto", size);
  }
  throw new Error("session did not finish");
}

/** Every request the model got keeps the system prompt, the user's request, and answered tool calls. */
function expectValidRequests(requests: FakeRequest[]): void {
  for (const req of requests) {
    const messages = req.body.messages as any[];
    if (messages[0].content === SUMMARY_SYSTEM_PROMPT) continue;
    expect(messages[0]).toEqual({ role: "system", content: SYSTEM });
    expect(messages.some((m) => m.role === "user" && m.content === REQUEST)).toBe(true);
    let open: string[] = [];
    for (const m of messages) {
      if (m.role === "tool") {
        expect(open).toContain(m.tool_call_id);
        open = open.filter((id) => id !== m.tool_call_id);
      } else {
        expect(open).toEqual([]);
        open = m.role === "assistant" ? (m.tool_calls ?? []).map((c: any) => c.id) : [];
      }
    }
    expect(open).toEqual([]);
  }
}

describe("a long session against a 16k window", () => {
  it("completes 200 tool calls with large outputs: auto-compaction keeps every prompt under the window", async () => {
    llm = await startFakeLlm({ contextLimit: 16_000 });
    scriptModel(200, 1500);
    const run = await runSession({ window: 16_000, outputTokens: 1500 });
    expect(run.error).toBeUndefined();
    expect(run.final).toBe("Read 200 files.");
    expect(llm.overflowed).toHaveLength(0);
    expect(run.promptSizes).toHaveLength(201);
    expect(Math.max(...run.promptSizes)).toBeLessThan(16_000);
    expect(run.compactions.length).toBeGreaterThan(5);
    expect(run.compactions.every((c) => c.reason === "auto" && c.tokensAfter < c.tokensBefore)).toBe(true);
    expect(run.compactions.some((c) => c.summary)).toBe(true);
    expectValidRequests(llm.completionRequests);
  });

  it("with auto-compaction off, overflow recovery alone carries the session, one retry per overflow", async () => {
    llm = await startFakeLlm({ contextLimit: 16_000 });
    scriptModel(200, 1500);
    const run = await runSession({ window: 16_000, outputTokens: 1500, autoCompact: false });
    // The first overflow compacts and retries once; later it overflows again and again recovers, never looping.
    expect(run.final).toBe("Read 200 files.");
    expect(llm.overflowed.length).toBeGreaterThan(0);
    expect(llm.overflowed.length).toBe(run.compactions.length);
    expect(run.compactions.every((c) => c.reason === "overflow")).toBe(true);
    expect(llm.completionRequests.length).toBeLessThan(201 + 3 * run.compactions.length + 1);
  });

  it("on an overflow the provider reports first, compacts and retries once, and the next request is smaller", async () => {
    // Our window says 32k, the server holds 8k: auto-compaction is late, the provider refuses first.
    llm = await startFakeLlm({ contextLimit: 8_000 });
    scriptModel(30, 1500);
    const run = await runSession({ window: 32_000, outputTokens: 1500 });
    expect(run.error).toBeUndefined();
    expect(run.final).toBe("Read 30 files.");
    expect(run.compactions.some((c) => c.reason === "overflow")).toBe(true);
    const refused = llm.overflowed[0]!;
    const index = llm.completionRequests.indexOf(refused);
    const retry = llm.completionRequests.slice(index + 1).find((r) => r.body.messages[0].content === SYSTEM)!;
    expect(JSON.stringify(retry.body.messages).length).toBeLessThan(JSON.stringify(refused.body.messages).length / 2);
    expectValidRequests(llm.completionRequests);
  });

  it("fails the turn with CONTEXT_OVERFLOW when even the compacted prompt does not fit, after exactly one retry", async () => {
    llm = await startFakeLlm({ contextLimit: 10 });
    scriptModel(5, 100);
    const run = await runSession({ window: 16_000, outputTokens: 100 });
    expect(run.error?.code).toBe("CONTEXT_OVERFLOW");
    expect(isVeilError(run.error)).toBe(true);
    expect(run.error!.message).toMatch(/context window of fake\/m \(10 tokens\): the prompt is \d+ tokens \(as the provider counts it\)/);
    // the call and the one retry (nothing older than the request to summarise): no loop.
    expect(llm.completionRequests).toHaveLength(2);
  });

  it("still makes one retry only when the summarizer is refused too, then CONTEXT_OVERFLOW", async () => {
    llm = await startFakeLlm();
    scriptModel(20, 500, (n) => n === 6 && llm.setContextLimit(50));
    const run = await runSession({ window: 16_000, outputTokens: 500 });
    expect(run.error?.code).toBe("CONTEXT_OVERFLOW");
    const fromLimit = llm.completionRequests.length - llm.completionRequests.findIndex((r) => llm.overflowed.includes(r));
    // the refused call, the refused summarizer call, the refused retry.
    expect(fromLimit).toBe(3);
    expect(llm.overflowed).toHaveLength(3);
  });
});

/**
 * The native engine at its seam: driven by a scripted RunIO and a scripted model, with no
 * runtime, store or bus. What it yields is all it does.
 */
import { describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import { memoryLogger } from "../../src/base/log.js";
import { ZERO_USAGE } from "../../src/base/usage.js";
import { runNativeLoop } from "../../src/engines/native/loop.js";
import type { RunEvent, RunIO, RunRequest } from "../../src/engines/types.js";
import type { AssistantMessage, LlmClient, LlmMessage, StreamEvent, ToolCallRequest } from "../../src/llm/types.js";
import type { SessionToolset } from "../../src/tools/registry.js";

const USAGE = { ...ZERO_USAGE, prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

/** A model that answers each call with the next scripted message, and keeps what it was sent. */
function scriptedModel(answers: { message: AssistantMessage; finishReason?: "stop" | "tool_calls" | "length" }[]): LlmClient & { seen: LlmMessage[][] } {
  const seen: LlmMessage[][] = [];
  return {
    seen,
    async *stream(request): AsyncIterable<StreamEvent> {
      seen.push([...request.messages]);
      const answer = answers.shift();
      if (!answer) throw new Error("the script has no answer left");
      if (answer.message.content) yield { type: "text", delta: answer.message.content };
      yield { type: "done", message: answer.message, finishReason: answer.finishReason ?? (answer.message.toolCalls.length ? "tool_calls" : "stop"), usage: USAGE, model: "m" };
    },
  };
}

function request(overrides: Partial<RunRequest> = {}): RunRequest {
  return {
    sessionId: "s",
    modelKey: "m",
    reasoning: null,
    systemPrompt: "SYSTEM",
    history: [{ role: "user", content: "go" }],
    toolset: { specs: () => [], warmUp: () => undefined, touches: () => [] } as unknown as SessionToolset,
    budget: async () => ({}),
    usageBefore: { ...ZERO_USAGE },
    signal: new AbortController().signal,
    engineState: null,
    ...overrides,
  };
}

/**
 * A RunIO whose tool calls are scripted: each call reports started, executing, then finishes
 * once `release(id)` is called, noting in `timeline` when each step ran.
 */
function scriptedIO(overrides: Partial<RunIO> = {}) {
  const timeline: string[] = [];
  const gates = new Map<string, () => void>();
  const opened = new Map<string, Promise<void>>();
  const gate = (id: string) => {
    if (!opened.has(id)) opened.set(id, new Promise<void>((resolve) => gates.set(id, resolve)));
    return opened.get(id)!;
  };
  const io: RunIO = {
    async *executeTool(call: ToolCallRequest): AsyncIterable<RunEvent> {
      yield { type: "tool_started", call, input: JSON.parse(call.arguments) };
      yield { type: "tool_state", callId: call.id, state: "executing" };
      timeline.push(`${call.id} runs`);
      await gate(call.id);
      yield { type: "tool_finished", input: {}, result: { call, output: `out of ${call.id}`, success: true, state: "done", durationMs: 1 } };
    },
    nextInputs: async () => [],
    hasPendingInput: () => false,
    stopRequested: () => null,
    saveEngineState: async () => undefined,
    clock: systemClock,
    log: memoryLogger(),
    ...overrides,
  };
  return { io, timeline, release: (id: string) => (gate(id), gates.get(id)!()) };
}

const call = (id: string, name = "probe"): ToolCallRequest => ({ id, name, arguments: JSON.stringify({ id }) });

describe("the native loop with a scripted RunIO", () => {
  it("runs a response's calls in parallel, yields every call's events as they come, and answers the model in call order", async () => {
    const model = scriptedModel([
      { message: { content: null, thinking: null, toolCalls: [call("a"), call("b")] } },
      { message: { content: "both done", thinking: null, toolCalls: [] } },
    ]);
    const script = scriptedIO();
    const events: RunEvent[] = [];
    for await (const event of runNativeLoop(request(), script.io, model)) {
      events.push(event);
      script.timeline.push(`took ${event.type}${"callId" in event ? ` ${event.callId}` : event.type === "tool_finished" ? ` ${event.result.call.id}` : ""}`);
      // b ends first: its result is yielded first; the model still sees a's result first.
      if (event.type === "tool_state" && event.callId === "b") script.release("b");
      if (event.type === "tool_finished" && event.result.call.id === "b") script.release("a");
    }
    const tools = events.filter((e) => e.type.startsWith("tool_"));
    expect(tools.map((e) => `${e.type}:${e.type === "tool_started" ? e.call.id : e.type === "tool_finished" ? e.result.call.id : (e as { callId: string }).callId}`)).toEqual([
      "tool_started:a",
      "tool_started:b",
      "tool_state:a",
      "tool_state:b",
      "tool_finished:b",
      "tool_finished:a",
    ]);
    // A call's step after an event runs only once that event was taken (and so stored).
    expect(script.timeline.indexOf("a runs")).toBeGreaterThan(script.timeline.indexOf("took tool_state a"));
    expect(script.timeline.indexOf("b runs")).toBeGreaterThan(script.timeline.indexOf("took tool_state b"));
    const second = model.seen[1]!;
    expect(second.slice(-2)).toEqual([
      { role: "tool", toolCallId: "a", content: "out of a" },
      { role: "tool", toolCallId: "b", content: "out of b" },
    ]);
    expect(events.at(-1)).toEqual({ type: "run_ended", stopReason: "stop" });
    expect(events.filter((e) => e.type === "assistant_message").map((e) => (e as { final: boolean }).final)).toEqual([false, true]);
  });

  it("never runs the calls of a response cut at the output limit: each is answered OUTPUT_TRUNCATED", async () => {
    const model = scriptedModel([
      { message: { content: null, thinking: null, toolCalls: [call("a")] }, finishReason: "length" },
      { message: { content: "smaller now", thinking: null, toolCalls: [] } },
    ]);
    let executed = 0;
    const script = scriptedIO({
      executeTool: () => {
        executed++;
        return (async function* () {})();
      },
    });
    const events: RunEvent[] = [];
    for await (const event of runNativeLoop(request(), script.io, model)) events.push(event);
    expect(executed).toBe(0);
    const finished = events.find((e) => e.type === "tool_finished");
    expect(finished?.type === "tool_finished" && finished.result.output).toMatch(/^Error: OUTPUT_TRUNCATED — /);
    expect(events.at(-1)).toEqual({ type: "run_ended", stopReason: "stop" });
  });

  it("stops at a boundary when the runtime asks, before another model call", async () => {
    const model = scriptedModel([{ message: { content: null, thinking: null, toolCalls: [call("a")] } }]);
    let stop: "suspended" | null = null;
    const script = scriptedIO({ stopRequested: () => stop });
    const events: RunEvent[] = [];
    for await (const event of runNativeLoop(request(), script.io, model)) {
      events.push(event);
      if (event.type === "tool_state") {
        stop = "suspended";
        script.release("a");
      }
    }
    expect(model.seen).toHaveLength(1);
    expect(events.at(-1)).toEqual({ type: "run_ended", stopReason: "suspended" });
  });

  it("answers a call whose executor ended without a result, so no call is left open", async () => {
    const model = scriptedModel([
      { message: { content: null, thinking: null, toolCalls: [call("a")] } },
      { message: { content: "ok", thinking: null, toolCalls: [] } },
    ]);
    const script = scriptedIO({ executeTool: (c) => (async function* () { yield { type: "tool_started", call: c, input: {} } as RunEvent; })() });
    const events: RunEvent[] = [];
    for await (const event of runNativeLoop(request(), script.io, model)) events.push(event);
    const finished = events.find((e) => e.type === "tool_finished");
    expect(finished?.type === "tool_finished" && finished.result).toMatchObject({ success: false, state: "error" });
    expect(model.seen[1]!.at(-1)).toMatchObject({ role: "tool", toolCallId: "a" });
  });
});

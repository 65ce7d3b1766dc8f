/**
 * The recorder at its seam: a scripted list of engine events in, and what it wrote out: rows
 * in a real SQLite store, events through a real event log and bus, observer calls, the result.
 */
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import type { VeilEvent } from "../../src/base/events.js";
import { randomIds } from "../../src/base/ids.js";
import { memoryLogger } from "../../src/base/log.js";
import { ZERO_USAGE } from "../../src/base/usage.js";
import { EventLog } from "../../src/core/event-log.js";
import { InProcessEventBus } from "../../src/core/memory-bus.js";
import { RunRecorder, type RunObserver } from "../../src/core/recorder.js";
import { SessionWriter } from "../../src/core/session-writer.js";
import type { RunEvent } from "../../src/engines/types.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const usage = (prompt: number, completion: number) => ({ ...ZERO_USAGE, prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });

describe("the recorder fed a scripted event list", () => {
  let ws: TempWorkspace;
  let store: SqliteStore;
  let log: EventLog;
  let events: VeilEvent[];
  let observed: string[];
  let recorder: RunRecorder;
  const sessionId = "sess_rec";

  beforeEach(async () => {
    ws = tmpWorkspace();
    store = SqliteStore.open(join(ws.root, "veil.db"));
    await store.createSession({ id: sessionId, agent: "default", mode: "chat" });
    const bus = new InProcessEventBus();
    events = [];
    bus.subscribe({}, (e) => events.push(e));
    log = new EventLog({ store, bus, clock: systemClock, log: memoryLogger() });
    observed = [];
    const observer: RunObserver = {
      onAssistant: (row, info) => observed.push(`assistant ${row.content ?? "(calls)"} final=${info.final} text=${info.hasText}`),
      onDrained: (rows) => observed.push(`drained ${rows.map((r) => r.content).join(",")}`),
    };
    const writer = new SessionWriter({ sessionId, store, events: log, ids: randomIds, now: () => Date.now() });
    recorder = new RunRecorder({ writer, observers: () => [observer], costOf: (u) => u.prompt_tokens / 1000 });
  });
  afterEach(async () => {
    await log.flush();
    await store.close();
    ws.cleanup();
  });

  it("turns a run with one tool call into its rows, states, events, observer calls and result", async () => {
    const call = { id: "call_1", name: "bash", arguments: '{"command":"ls"}' };
    const script: RunEvent[] = [
      { type: "text_delta", delta: "Let me look." },
      { type: "tool_call_started", id: "call_1", name: "bash" },
      { type: "model_usage", usage: usage(100, 10), model: "m" },
      { type: "assistant_message", message: { content: "Let me look.", thinking: null, toolCalls: [call] }, finishReason: "tool_calls", usage: usage(100, 10), final: false },
      { type: "tool_started", call, input: { command: "ls" } },
      { type: "tool_state", callId: "call_1", state: "executing" },
      { type: "tool_progress", callId: "call_1", name: "bash", elapsedMs: 5200 },
      { type: "tool_finished", input: { command: "ls" }, result: { call, output: "a.txt", success: true, state: "done", durationMs: 5300 } },
      { type: "model_usage", usage: usage(200, 20), model: "m" },
      { type: "assistant_message", message: { content: "There is a.txt.", thinking: null, toolCalls: [] }, finishReason: "stop", usage: usage(200, 20), final: true },
      { type: "run_ended", stopReason: "stop" },
    ];
    await recorder.started();
    for (const event of script) await recorder.apply(event);
    const result = recorder.result();
    await recorder.finished(result, { cut: false, log: memoryLogger() });
    await log.flush();

    const rows = await store.listMessages(sessionId);
    expect(rows.map((r) => [r.role, r.content])).toEqual([
      ["assistant", "Let me look."],
      ["tool", "a.txt"],
      ["assistant", "There is a.txt."],
    ]);
    expect((await store.listToolCalls(sessionId)).map((c) => [c.id, c.state, c.output])).toEqual([["call_1", "done", "a.txt"]]);
    const session = (await store.getSession(sessionId))!;
    expect(session.status).toBe("idle");
    expect(session.token_usage).toMatchObject({ prompt_tokens: 300, completion_tokens: 30 });
    expect(session.cost_usd).toBeCloseTo(0.3);

    expect(events.map((e) => e.type)).toEqual([
      "session.state",
      "chat.chunk",
      "inference.tool",
      "chat.message",
      "tool.start",
      "tool.progress",
      "tool.end",
      "chat.message",
      "chat.message",
      "session.state",
      "chat.done",
    ]);
    expect(events.find((e) => e.type === "tool.progress")).toMatchObject({ toolCallId: "call_1", elapsed: 5 });
    expect(events.at(-1)).toMatchObject({ type: "chat.done", content: "There is a.txt.", stopReason: "stop", messageId: rows[2]!.id, cost_usd: expect.closeTo(0.3, 10) });
    expect(observed).toEqual(["assistant Let me look. final=false text=true", "assistant There is a.txt. final=true text=true"]);
    expect(result).toMatchObject({ content: "There is a.txt.", stopReason: "stop", iterations: 2, usage: { prompt_tokens: 300, completion_tokens: 30 } });
  });

  it("closes a cut run: the open call gets a placeholder with its events, then chat.done with the stop reason", async () => {
    const call = { id: "call_2", name: "sleep", arguments: "{}" };
    await recorder.started();
    for (const event of [
      { type: "model_usage", usage: usage(10, 1) },
      { type: "assistant_message", message: { content: null, thinking: null, toolCalls: [call] }, finishReason: "tool_calls", usage: usage(10, 1), final: false },
      { type: "tool_started", call, input: {} },
      { type: "tool_state", callId: "call_2", state: "executing" },
      { type: "run_ended", stopReason: "cancelled" },
    ] satisfies RunEvent[]) {
      await recorder.apply(event);
    }
    await recorder.finished(recorder.result(), { cut: true, log: memoryLogger() });
    await log.flush();
    const tool = (await store.listMessages(sessionId)).find((r) => r.role === "tool")!;
    expect(tool).toMatchObject({ tool_call_id: "call_2", meta: { placeholder: true } });
    expect(tool.content).toMatch(/^Error: CANCELLED — /);
    expect((await store.listToolCalls(sessionId))[0]!.state).toBe("cancelled");
    const types = events.map((e) => e.type);
    expect(types.slice(types.indexOf("tool.start"))).toEqual(["tool.start", "session.state", "tool.end", "chat.message", "chat.done"]);
    expect(events.at(-1)).toMatchObject({ type: "chat.done", stopReason: "cancelled" });
  });

  it("moves inbox items into the history in order, publishes them and tells the observers", async () => {
    for (const [id, content] of [["msg_a", "first"], ["msg_b", "second"]] as const) {
      await store.addInbox({ id, session_id: sessionId, content, meta: null, created_at: new Date().toISOString() });
    }
    const rows = await recorder.deliverInbox(await store.listInbox(sessionId), (item) => ({ id: item.id, session_id: sessionId, role: "user", content: item.content }));
    await log.flush();
    expect(rows.map((r) => r.content)).toEqual(["first", "second"]);
    expect(await store.listInbox(sessionId)).toEqual([]);
    expect(events.filter((e) => e.type === "chat.message").map((e) => (e as { content: string }).content)).toEqual(["first", "second"]);
    expect(observed).toEqual(["drained first,second"]);
  });
});

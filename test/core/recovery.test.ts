import { afterEach, describe, expect, it } from "vitest";
import { createRuntime } from "../../src/runtime.js";
import { memoryLogger } from "../../src/base/log.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { reply } from "../helpers/fake-llm.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

describe("recovery after a crash", () => {
  it("closes dangling tool calls with placeholders and answers messages acknowledged before the crash", async () => {
    h = await createRuntimeHarness();
    const { store } = h.runtime;
    const session = await h.runtime.sessions.create({ agent: "default" });
    // What a process killed mid-tool leaves behind: a running session, an executing call, a queued message.
    await store.updateSession(session.id, { status: "running" });
    await store.appendMessage({ id: "msg_u1", session_id: session.id, role: "user", content: "start" });
    const assistant = await store.appendMessage({ id: "msg_a1", session_id: session.id, role: "assistant", content: null, tool_calls: [{ id: "call_1", name: "sleep", arguments: '{"seconds":100}' }] });
    await store.upsertToolCall({ id: "call_1", session_id: session.id, message_id: assistant.id, name: "sleep", arguments: '{"seconds":100}', state: "executing" });
    await store.addInbox({ id: "msg_q1", session_id: session.id, content: "are you done?", meta: null, created_at: new Date().toISOString() });

    h.llm.enqueue(reply().text("recovered").stop());
    const restarted = await createRuntime({ workspace: h.ws.root, env: h.env, log: memoryLogger(), store, bus: h.runtime.bus });
    const done = new Promise<void>((resolve) => h.runtime.bus.subscribe({ sessionId: session.id, types: ["chat.done"] }, () => resolve()));
    await restarted.start();
    await done;
    const messages = await store.listMessages(session.id);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "start"],
      ["assistant", null],
      ["tool", "Error: CANCELLED — the run was cancelled before this tool call finished"],
      ["user", "are you done?"],
      ["assistant", "recovered"],
    ]);
    expect((await store.listToolCalls(session.id)).map((c) => c.state)).toEqual(["cancelled"]);
    const sent = h.llm.completionRequests[0]!.body.messages.map((m: { role: string }) => m.role);
    expect(sent).toEqual(["system", "user", "assistant", "tool", "user"]);
    await restarted.sessions.shutdown();
  });
});

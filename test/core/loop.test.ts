import { afterEach, describe, expect, it } from "vitest";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { hang, httpError, reply } from "../helpers/fake-llm.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("agent loop", () => {
  it("streams a text reply and emits the documented event sequence", async () => {
    h = await createRuntimeHarness();
    h.llm.enqueue(reply().text("Hel").text("lo").usage({ prompt_tokens: 100, completion_tokens: 5, cached_tokens: 40 }).stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const receipt = await h.runtime.sessions.send(session.id, "hi");
    const result = await receipt.result;

    expect(result.content).toBe("Hello");
    expect(result.stopReason).toBe("stop");
    const types = h.events.filter((e) => e.sessionId === session.id).map((e) => e.type);
    expect(types).toEqual(["session.state", "chat.message", "chat.chunk", "chat.chunk", "chat.message", "session.state", "chat.done"]);
    // Stored events are numbered densely; streaming deltas go out live with no seq.
    const seqs = h.events.filter((e) => e.sessionId === session.id).map((e) => e.seq);
    expect(seqs).toEqual([1, 2, undefined, undefined, 3, 4, 5]);
    const stored = await h.runtime.store.listEvents(session.id);
    expect(stored.map((e) => e.type)).toEqual(["session.state", "chat.message", "chat.message", "session.state", "chat.done"]);

    const request = h.llm.completionRequests[0]!.body;
    expect(request.model).toBe("fake-model");
    expect(request.messages[0].role).toBe("system");
    expect(request.messages.at(-1)).toMatchObject({ role: "user", content: "hi" });
    expect(request.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(expect.arrayContaining(["log_write", "sleep"]));

    const row = await h.runtime.store.getSession(session.id);
    expect(row?.status).toBe("idle");
    expect(row?.context_size).toBe(105);
    expect(row?.token_usage.cached_tokens).toBe(40);
    const messages = await h.runtime.store.listMessages(session.id);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "hi"],
      ["assistant", "Hello"],
    ]);
    expect(messages[1]!.finish_reason).toBe("stop");
  });

  it("runs tool calls whose arguments arrive split across chunks, then feeds results back", async () => {
    h = await createRuntimeHarness();
    h.llm.enqueue(reply().tool("log_write", { message: "step one done", level: "info" }, { fragments: 5 }).stop());
    h.llm.enqueue(reply().text("finished").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const result = await (await h.runtime.sessions.send(session.id, "go")).result;

    expect(result.content).toBe("finished");
    const second = h.llm.completionRequests[1]!.body.messages;
    const assistant = second.at(-2);
    expect(assistant.role).toBe("assistant");
    expect(JSON.parse(assistant.tool_calls[0].function.arguments)).toEqual({ message: "step one done", level: "info" });
    expect(second.at(-1)).toMatchObject({ role: "tool", content: "step one done", tool_call_id: assistant.tool_calls[0].id });

    const types = h.events.filter((e) => e.sessionId === session.id).map((e) => e.type);
    const inference = types.indexOf("inference.tool");
    expect(inference).toBeGreaterThan(-1);
    expect(types.indexOf("tool.start")).toBeGreaterThan(inference);
    const end = h.events.find((e) => e.type === "tool.end");
    expect(end).toMatchObject({ toolName: "log_write", success: true, output: "step one done", toolInput: { message: "step one done", level: "info" } });
    const calls = await h.runtime.store.listToolCalls(session.id);
    expect(calls.map((c) => c.state)).toEqual(["done"]);
  });

  it("stores parallel tool results in the order the model asked, whatever order they finish", async () => {
    h = await createRuntimeHarness();
    h.llm.enqueue(reply().tool("sleep", { seconds: 0.2 }).tool("log_write", { message: "fast" }).stop());
    h.llm.enqueue(reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "go")).result;
    const ends = h.events.filter((e) => e.type === "tool.end").map((e) => (e as { toolName: string }).toolName);
    expect(ends).toEqual(["log_write", "sleep"]);
    // Each result is stored the moment its call ends (so a crash keeps it); the model still sees them in call order.
    const tools = (await h.runtime.store.listMessages(session.id)).filter((m) => m.role === "tool");
    expect(tools.map((m) => m.content)).toEqual(["fast", "Slept 0.2 seconds."]);
    const next = h.llm.completionRequests[1]!.body.messages.filter((m: { role: string }) => m.role === "tool");
    expect(next.map((m: { content: string }) => m.content)).toEqual(["Slept 0.2 seconds.", "fast"]);
  });

  it("answers malformed arguments, unknown tools and schema errors with errors the model can act on", async () => {
    h = await createRuntimeHarness();
    h.llm.enqueue(
      reply()
        .rawToolCall("log_write", "{not json")
        .tool("no_such_tool", {})
        .tool("log_write", { level: "loud" })
        .stop(),
    );
    h.llm.enqueue(reply().text("recovered").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const result = await (await h.runtime.sessions.send(session.id, "go")).result;
    expect(result.content).toBe("recovered");
    const tools = (await h.runtime.store.listMessages(session.id)).filter((m) => m.role === "tool").map((m) => m.content ?? "");
    expect(tools[0]).toMatch(/^Error: VALIDATION_ERROR — arguments are not valid JSON/);
    expect(tools[1]).toMatch(/^Error: TOOL_NOT_FOUND — no tool named "no_such_tool"/);
    expect(tools[2]).toMatch(/^Error: VALIDATION_ERROR — .*missing required field "message"/);
    expect(tools[2]).toMatch(/"level" must be one of|level/);
  });

  it("stops at max_iterations and records the reason", async () => {
    h = await createRuntimeHarness({ settings: { budget: { max_iterations: 2 } } });
    h.llm.respond(() => reply().tool("log_write", { message: "again" }).stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const result = await (await h.runtime.sessions.send(session.id, "loop forever")).result;
    expect(result.stopReason).toBe("max_iterations");
    expect(h.llm.completionRequests.length).toBe(2);
    const done = h.events.find((e) => e.type === "chat.done");
    expect(done).toMatchObject({ stopReason: "max_iterations" });
  });

  it("stops on the session token budget", async () => {
    h = await createRuntimeHarness({ settings: { budget: { max_tokens: 50 } } });
    h.llm.respond(() => reply().tool("log_write", { message: "x" }).usage({ prompt_tokens: 40, completion_tokens: 20 }).stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const result = await (await h.runtime.sessions.send(session.id, "go")).result;
    expect(result.stopReason).toBe("max_tokens");
    expect(h.llm.completionRequests.length).toBe(1);
  });

  it("injects a message sent mid-run at the next iteration boundary, after the tool results", async () => {
    h = await createRuntimeHarness();
    const gate = deferred();
    h.llm.enqueue(reply().waitFor(gate.promise).tool("log_write", { message: "working" }).stop());
    h.llm.enqueue(reply().text("saw both").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const first = await h.runtime.sessions.send(session.id, "first");
    await h.llm.waitForRequests(1);
    const second = await h.runtime.sessions.send(session.id, "second");
    expect(first.delivery).toBe("started");
    expect(second.delivery).toBe("queued");
    gate.resolve();
    const [r1, r2] = await Promise.all([first.result, second.result]);
    expect(r1.content).toBe("saw both");
    expect(r2.content).toBe("saw both");
    const messages = h.llm.completionRequests[1]!.body.messages.map((m: { role: string; content: unknown }) => [m.role, m.content]);
    expect(messages.slice(-3)).toEqual([
      ["assistant", null],
      ["tool", "working"],
      ["user", "second"],
    ]);
    expect(h.llm.completionRequests.length).toBe(2);
  });

  it("a message arriving mid-stream is injected: the run goes on and answers it", async () => {
    h = await createRuntimeHarness();
    const gate = deferred();
    h.llm.enqueue(reply().text("one").waitFor(gate.promise).stop());
    h.llm.enqueue(reply().text("two").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const first = await h.runtime.sessions.send(session.id, "first");
    await h.llm.waitForRequests(1);
    const second = await h.runtime.sessions.send(session.id, "second");
    gate.resolve();
    expect((await first.result).content).toBe("two");
    expect((await second.result).content).toBe("two");
    const stored = (await h.runtime.store.listMessages(session.id)).map((m) => m.content);
    expect(stored).toEqual(["first", "one", "second", "two"]);
    expect(h.events.filter((e) => e.type === "chat.done")).toHaveLength(1);
  });

  it("a message arriving after the run's last boundary starts a new run instead of being lost", async () => {
    h = await createRuntimeHarness();
    h.llm.enqueue(reply().text("one").stop());
    h.llm.enqueue(reply().text("two").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    let late: Promise<Awaited<ReturnType<typeof h.runtime.sessions.send>>> | undefined;
    // The final assistant message is published after the run decided it is final: send right then.
    h.runtime.bus.subscribe({ sessionId: session.id, types: ["chat.message"] }, (e) => {
      if ((e as { role: string }).role === "assistant" && !late) late = h.runtime.sessions.send(session.id, "second");
    });
    const first = await h.runtime.sessions.send(session.id, "first");
    expect((await first.result).content).toBe("one");
    const receipt = await late!;
    expect(receipt.delivery).toBe("queued");
    expect((await receipt.result).content).toBe("two");
    const stored = (await h.runtime.store.listMessages(session.id)).map((m) => m.content);
    expect(stored).toEqual(["first", "one", "second", "two"]);
    expect(h.events.filter((e) => e.type === "chat.done")).toHaveLength(2);
  });

  it("cancel during a hanging model call ends the run cleanly", async () => {
    h = await createRuntimeHarness();
    h.llm.enqueue(hang());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const receipt = await h.runtime.sessions.send(session.id, "hi");
    await h.llm.waitForRequests(1);
    expect(await h.runtime.sessions.cancel(session.id)).toBe(true);
    const result = await receipt.result;
    expect(result.stopReason).toBe("cancelled");
    expect((await h.runtime.store.getSession(session.id))?.status).toBe("idle");
  });

  it("cancel during a tool call leaves every tool call answered so history stays valid", async () => {
    h = await createRuntimeHarness();
    h.llm.enqueue(reply().tool("sleep", { seconds: 200 }).tool("log_write", { message: "quick" }).stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const started = new Promise<void>((resolve) => {
      const off = h.runtime.bus.subscribe({ sessionId: session.id, types: ["tool.start"] }, (e) => {
        if ((e as { toolName: string }).toolName === "sleep") {
          off();
          resolve();
        }
      });
    });
    const receipt = await h.runtime.sessions.send(session.id, "hi");
    await started;
    await h.runtime.sessions.cancel(session.id);
    const result = await receipt.result;
    expect(result.stopReason).toBe("cancelled");
    const messages = await h.runtime.store.listMessages(session.id);
    const assistant = messages.find((m) => m.role === "assistant")!;
    const answered = messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id);
    expect(answered.sort()).toEqual(assistant.tool_calls!.map((c) => c.id).sort());
    const sleepResult = messages.find((m) => m.role === "tool" && m.tool_call_id === assistant.tool_calls![0]!.id)!;
    expect(sleepResult.content).toMatch(/^Error: CANCELLED —/);
    const states = (await h.runtime.store.listToolCalls(session.id)).map((c) => [c.name, c.state]);
    // The quick call may have finished or may have been stopped by the cancel; either way it is answered.
    expect(states).toContainEqual(["sleep", "cancelled"]);
    expect(states.find(([name]) => name === "log_write")?.[1]).toMatch(/^(done|cancelled)$/);
  });

  it("a provider that is down gives a clear error and keeps the user message", async () => {
    h = await createRuntimeHarness();
    h.llm.respond(() => httpError(503, { body: { error: { message: "overloaded" } } }));
    const session = await h.runtime.sessions.create({ agent: "default" });
    const result = await (await h.runtime.sessions.send(session.id, "are you there?")).result;
    expect(result.stopReason).toBe("error");
    expect(result.error?.message).toMatch(/503|overloaded/);
    const messages = await h.runtime.store.listMessages(session.id);
    expect(messages.map((m) => m.content)).toEqual(["are you there?"]);
    expect((await h.runtime.store.getSession(session.id))?.status).toBe("idle");
  });

  it("honours the per-call model over session, agent and settings", async () => {
    h = await createRuntimeHarness();
    h.llm.respond((req) => reply().text(`model=${req.body.model}`).stop());
    const session = await h.runtime.sessions.create({ agent: "default", model: "session-model" });
    expect((await (await h.runtime.sessions.send(session.id, "a")).result).content).toBe("model=session-model");
    expect((await (await h.runtime.sessions.send(session.id, "b", { model: "call-model" })).result).content).toBe("model=call-model");
  });

  it("routes cc/ model keys to the claude-cli engine seam instead of the default provider", async () => {
    h = await createRuntimeHarness();
    const session = await h.runtime.sessions.create({ agent: "default", model: "cc/claude-sonnet" });
    const result = await (await h.runtime.sessions.send(session.id, "hi")).result;
    expect(result.stopReason).toBe("error");
    expect(result.error).toMatchObject({ code: "CONFIG_ERROR", message: expect.stringMatching(/claude-cli engine/) });
    expect(h.llm.completionRequests).toHaveLength(0);
  });

  it("sees an agent folder added after start without a restart", async () => {
    h = await createRuntimeHarness();
    await expect(h.runtime.sessions.create({ agent: "late" })).rejects.toMatchObject({ code: "AGENT_NOT_FOUND" });
    h.ws.write(".veil/agents/late/agent.json", JSON.stringify({ description: "added later" }));
    h.ws.write(".veil/agents/late/AGENT.md", "You arrived late.");
    const session = await h.runtime.sessions.create({ agent: "late" });
    h.llm.enqueue(reply().text("hi").stop());
    await (await h.runtime.sessions.send(session.id, "hello")).result;
    expect(h.llm.completionRequests[0]!.body.messages[0].content).toMatch(/^You arrived late\./);
  });
});

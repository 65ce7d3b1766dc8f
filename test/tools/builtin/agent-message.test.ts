import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/base/clock.js";
import { agentMessage } from "../../../src/core/agents/tools/agent-message.js";
import { agentSpawn } from "../../../src/core/agents/tools/agent-spawn.js";
import { reply } from "../../helpers/fake-llm.js";
import { createAgentsHarness, deferred, lastMessage, systemPrompt, tag, type AgentsHarness } from "../../core/agents/harness.js";

let h: AgentsHarness;
afterEach(async () => {
  await h?.close();
});

async function spawnWorker(parent: string, name: string, objective: string): Promise<string> {
  return tag((await h.call(agentSpawn, parent, { agent: "worker", instance_name: name, objective })).output, "session-id")!;
}

describe("agent_message", () => {
  it("answers SESSION_NOT_FOUND, SESSION_CLOSED, and refuses the caller's own session", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    expect((await h.call(agentMessage, a, { sessionId: "sess_nope", message: "hi" })).output).toMatch(/^Error: SESSION_NOT_FOUND — no session "sess_nope"/);
    const w = await spawnWorker(a, "w", "OBJ-closed");
    await h.runtime.sessions.close(w);
    expect((await h.call(agentMessage, a, { sessionId: w, message: "hi" })).output).toMatch(/^Error: SESSION_CLOSED — session .* is closed/);
    expect((await h.call(agentMessage, a, { sessionId: w, message: "hi", async_inform: true })).output).toMatch(/^Error: SESSION_CLOSED/);
    expect((await h.call(agentMessage, a, { sessionId: a, message: "hi" })).output).toMatch(/^Error: VALIDATION_ERROR — agent_message cannot target your own session/);
    expect(h.llm.completionRequests).toHaveLength(0);
  });

  it("sync to an idle target starts a turn and returns the documented envelope", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const w = await spawnWorker(a, "planner_1", "OBJ-idle");
    h.worker("OBJ-idle").enqueue(reply().text("line one\nline two").stop());
    const result = await h.call(agentMessage, a, { sessionId: w, message: "plan it" });
    expect(result.output).toBe(`<instance-name>planner_1</instance-name>\n<session-id>${w}</session-id>\n<finish-reason>stop</finish-reason>\n<content>\nline one\nline two\n</content>`);
    expect(lastMessage(h.llm.completionRequests[0]!)).toBe(`[Message from boss (session: ${a})]: plan it`);
  });

  it("sync to a busy target injects at the next boundary and waits for the correlated reply", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const w = await spawnWorker(a, "w", "OBJ-busy");
    const gate = deferred();
    h.worker("OBJ-busy").enqueue(reply().waitFor(gate.promise).tool("log_write", { message: "busy" }).stop(), reply().text("answer to both").stop());
    const userRun = await h.runtime.sessions.send(w, "a user's own task");
    await h.llm.waitForRequests(1);
    const pending = h.call(agentMessage, a, { sessionId: w, message: "and mine" });
    await h.untilInbox(w, 1);
    gate.resolve();
    const result = await pending;
    expect(tag(result.output, "content")).toBe("answer to both");
    expect((await userRun.result).content).toBe("answer to both");
    const second = h.llm.completionRequests[1]!.body.messages.slice(-2).map((m: { role: string; content: string }) => [m.role, m.content]);
    expect(second).toEqual([
      ["tool", "busy"],
      ["user", `[Message from boss (session: ${a})]: and mine`],
    ]);
    expect(h.llm.completionRequests).toHaveLength(2);
  });

  it("sync timeout answers TIMEOUT and leaves the target running", async () => {
    const clock = new ManualClock();
    h = await createAgentsHarness({ clock });
    const a = await h.bossSession();
    const w = await spawnWorker(a, "slow", "OBJ-slow");
    const gate = deferred();
    h.worker("OBJ-slow").enqueue(reply().waitFor(gate.promise).text("late answer").stop());
    const pending = h.call(agentMessage, a, { sessionId: w, message: "take your time", timeout: 5 });
    await h.llm.waitForRequests(1);
    await clock.advance(5_000);
    const result = await pending;
    expect(result.output).toMatch(/^Error: TIMEOUT — no reply from session .* within 5 s\. The sub-agent was NOT stopped/);
    expect(h.runtime.sessions.isRunning(w)).toBe(true);
    const done = h.nextDone(w);
    gate.resolve();
    expect(await done).toMatchObject({ stopReason: "stop", content: "late answer" });
  });

  it("sync full_steps returns the per-line log of what the target did for the message", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const w = await spawnWorker(a, "w", "OBJ-steps");
    h.worker("OBJ-steps").enqueue(reply().tool("log_write", { message: "x" }).stop(), reply().text("finished").stop());
    const result = await h.call(agentMessage, a, { sessionId: w, message: "go", full_steps: true });
    expect(tag(result.output, "content")).toBe('[tool_call] log_write {"message":"x"}\n[assistant] finished');
  });

  it("a sync call after an async one from the same caller does not abort the dispatch; the async reply satisfies it once", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const w = await spawnWorker(a, "w", "OBJ-merge");
    const gate = deferred();
    h.worker("OBJ-merge").enqueue(reply().waitFor(gate.promise).tool("log_write", { message: "first" }).stop(), reply().text("merged final").stop());
    expect((await h.call(agentMessage, a, { sessionId: w, message: "async task", async_inform: true })).details?.dispatchRole).toBe("msg#1");
    await h.llm.waitForRequests(1);
    const pending = h.call(agentMessage, a, { sessionId: w, message: "sync follow-up" });
    await h.untilInbox(w, 1);
    gate.resolve();
    const result = await pending;
    expect(tag(result.output, "content")).toBe("merged final");
    expect(result.details?.source).toBe("merged");
    await h.service.delivery.settled();
    expect(await h.messages(a)).toEqual([]); // no duplicate delivery as a user message
    expect(await h.runtime.store.listInbox(a)).toEqual([]);
    const done = h.events.filter((e) => e.type === "chat.done" && e.sessionId === w);
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ stopReason: "stop" });
    const audits = await h.runtime.store.listAudit({ sessionId: w });
    expect(audits.map((x) => x.kind)).toContain("agent.reply_to_sync");
  });

  it("a sync call merges this caller's pending msg#2+: its first mid-run text answers the sync call", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const b = await h.bossSession();
    const w = await spawnWorker(a, "w", "OBJ-merge2");
    const gate = deferred();
    const gateEnd = deferred();
    h.worker("OBJ-merge2").enqueue(
      reply().waitFor(gate.promise).tool("log_write", { message: "first" }).stop(),
      reply().text("mid-run for B").tool("log_write", { message: "second" }).stop(),
      reply().waitFor(gateEnd.promise).text("final for A").stop(),
    );
    await h.call(agentMessage, a, { sessionId: w, message: "seed", async_inform: true });
    await h.llm.waitForRequests(1);
    expect((await h.call(agentMessage, b, { sessionId: w, message: "async from B", async_inform: true })).details?.dispatchRole).toBe("msg#2+");
    const pending = h.call(agentMessage, b, { sessionId: w, message: "sync from B" });
    await h.untilInbox(w, 2);
    gate.resolve();
    const result = await pending;
    expect(tag(result.output, "content")).toBe("mid-run for B");
    expect(h.runtime.sessions.isRunning(w)).toBe(true);
    const toA = h.nextUserMessage(a);
    gateEnd.resolve();
    expect(await toA).toBe(`[Message from worker (session: ${w})]: final for A`);
    await h.service.delivery.settled();
    expect((await h.messages(b)).filter((m) => m.role === "user")).toEqual([]);
    expect(systemPrompt(h.llm.completionRequests[0]!)).toContain("ROLE=worker");
  });
});

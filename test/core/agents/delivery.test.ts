import { afterEach, describe, expect, it } from "vitest";
import { agentMessage } from "../../../src/core/agents/tools/agent-message.js";
import { agentSpawn } from "../../../src/core/agents/tools/agent-spawn.js";
import { COINCIDED_TEXT } from "../../../src/core/agents/messages.js";
import { reply, type FakeRequest } from "../../helpers/fake-llm.js";
import { createAgentsHarness, deferred, lastMessage, systemPrompt, tag, type AgentsHarness } from "./harness.js";

let h: AgentsHarness;
afterEach(async () => {
  await h?.close();
});

async function spawnWorker(parent: string, name: string, objective: string): Promise<string> {
  const result = await h.call(agentSpawn, parent, { agent: "worker", instance_name: name, objective });
  expect(result.success).toBe(true);
  return tag(result.output, "session-id")!;
}

function workerRequests(objective: string): FakeRequest[] {
  return h.llm.completionRequests.filter((r) => systemPrompt(r).startsWith("ROLE=worker") && systemPrompt(r).includes(objective));
}

/** Every message from `from` that reached `to`: delivered into history or still in its inbox. */
async function repliesFrom(to: string, from: string): Promise<string[]> {
  const stored = (await h.messages(to)).filter((m) => m.role === "user").map((m) => m.content ?? "");
  const waiting = (await h.runtime.store.listInbox(to)).map((i) => i.content);
  return [...stored, ...waiting].filter((c) => c.startsWith(`[Message from worker (session: ${from})]`));
}

describe("asymmetric delivery of async agent messages", () => {
  it("msg#1 gets the final text; msg#2+ gets the first text after its drain, at once, with a still-running reminder", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const b = await h.bossSession();
    const w = await spawnWorker(a, "w", "OBJ-chain");
    const gate1 = deferred();
    const gate3 = deferred();
    h.worker("OBJ-chain").enqueue(
      reply().waitFor(gate1.promise).tool("log_write", { message: "step one" }).stop(),
      reply().text("interim for B").tool("log_write", { message: "step two" }).stop(),
      reply().waitFor(gate3.promise).text("final for A").stop(),
    );
    const toA = h.nextUserMessage(a);
    const toB = h.nextUserMessage(b);

    const first = await h.call(agentMessage, a, { sessionId: w, message: "the task", async_inform: true });
    expect(first.details?.dispatchRole).toBe("msg#1");
    await h.llm.waitForRequests(1);
    const second = await h.call(agentMessage, b, { sessionId: w, message: "status?", async_inform: true });
    expect(second.details?.dispatchRole).toBe("msg#2+");
    expect(tag(second.output, "notice")).toMatch(/first reply after reading yours/);
    gate1.resolve();

    const gotB = await toB;
    expect(h.runtime.sessions.isRunning(w)).toBe(true); // delivered mid-run: the worker waits on gate3
    expect(gotB.startsWith(`[Message from worker (session: ${w})]: <system-reminder>`)).toBe(true);
    expect(gotB).toMatch(/still running/);
    expect(gotB.endsWith("\ninterim for B")).toBe(true);
    expect(lastMessage(workerRequests("OBJ-chain")[1]!)).toBe(`[Message from boss (session: ${b})]: status?`);

    gate3.resolve();
    expect(await toA).toBe(`[Message from worker (session: ${w})]: final for A`);
    await h.service.delivery.settled();
    expect(await repliesFrom(a, w)).toHaveLength(1);
    expect(await repliesFrom(b, w)).toHaveLength(1);
  });

  it("coincide rule: a msg#2+ whose first text is the run's final reply gets no separate delivery; its row is marked", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const b = await h.bossSession();
    const w = await spawnWorker(a, "w", "OBJ-coincide");
    const gate = deferred();
    h.worker("OBJ-coincide").enqueue(reply().waitFor(gate.promise).tool("log_write", { message: "working" }).stop(), reply().text("the one final answer").stop());
    const toA = h.nextUserMessage(a);
    expect((await h.call(agentMessage, a, { sessionId: w, message: "task", async_inform: true })).details?.dispatchRole).toBe("msg#1");
    await h.llm.waitForRequests(1);
    expect((await h.call(agentMessage, b, { sessionId: w, message: "also this", async_inform: true })).details?.dispatchRole).toBe("msg#2+");
    gate.resolve();

    expect(await toA).toBe(`[Message from worker (session: ${w})]: the one final answer`);
    await h.service.delivery.settled();
    expect(await repliesFrom(b, w)).toEqual([]);
    expect(await h.messages(b)).toEqual([]);
    const row = (await h.messages(w)).find((m) => m.content === `[Message from boss (session: ${b})]: also this`)!;
    expect(row.meta).toMatchObject({ audit: COINCIDED_TEXT, dispatch_role: "msg#2+" });
    const audits = await h.runtime.store.listAudit({ sessionId: w });
    expect(audits.filter((x) => x.kind === "agent.coincided").map((x) => x.data.callerId)).toEqual([b]);
    expect(audits.filter((x) => x.kind === "agent.delivered").map((x) => x.data.callerId)).toEqual([a]);
  });

  it("two concurrent first calls from different callers: exactly one becomes msg#1, and nothing is delivered twice (20 rounds)", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const b = await h.bossSession();
    for (let i = 0; i < 20; i++) {
      const objective = `OBJ-race-${i}-end`;
      const w = await spawnWorker(a, `w${i}`, objective);
      h.worker(objective, () => reply().text(`done ${i}`).stop());
      const callers = i % 2 === 0 ? [a, b] : [b, a];
      const results = await Promise.all(callers.map((c) => h.call(agentMessage, c, { sessionId: w, message: `go ${i}`, async_inform: true })));
      const roles = results.map((r) => r.details?.dispatchRole);
      expect([...roles].sort()).toEqual(["msg#1", "msg#2+"]);
      const seedCaller = callers[roles.indexOf("msg#1")]!;
      const followerCaller = callers[roles.indexOf("msg#2+")]!;
      await h.service.delivery.settled();

      const toSeed = await repliesFrom(seedCaller, w);
      expect(toSeed).toHaveLength(1);
      expect(toSeed[0]).toBe(`[Message from worker (session: ${w})]: done ${i}`);
      const toFollower = await repliesFrom(followerCaller, w);
      const audits = await h.runtime.store.listAudit({ sessionId: w });
      const coincided = audits.filter((x) => x.kind === "agent.coincided");
      // The follower either coincided with the final reply or got its own mid-run text: exactly one of the two.
      expect(toFollower.length + coincided.length).toBe(1);
      expect(audits.filter((x) => x.kind === "agent.delivered")).toHaveLength(1 + toFollower.length);
    }
  });

  it("a reply to an idle caller starts a new turn there with the wrapped reply as the user message", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const w = await spawnWorker(a, "w", "OBJ-idle");
    h.worker("OBJ-idle").enqueue(reply().text("report ready").stop());
    h.boss.enqueue(reply().text("thanks, noted").stop());
    const bossDone = h.nextDone(a);
    await h.call(agentMessage, a, { sessionId: w, message: "report please", async_inform: true });
    expect(await bossDone).toMatchObject({ content: "thanks, noted" });
    const bossRequest = h.llm.completionRequests.find((r) => systemPrompt(r).startsWith("ROLE=boss"))!;
    expect(lastMessage(bossRequest)).toBe(`[Message from worker (session: ${w})]: report ready`);
    const stored = (await h.messages(a)).find((m) => m.role === "user")!;
    expect(stored.meta).toMatchObject({ source: "agent", fromSessionId: w, dispatch_role: "msg#1" });
  });

  it("a reply to a busy caller waits in its inbox and is injected at its next iteration boundary", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const bossGate = deferred();
    h.boss.enqueue(
      reply().tool("agent_spawn", { agent: "worker", instance_name: "bg", objective: "OBJ-busy", initial_message: { message: "go", async_inform: true } }).stop(),
      reply().waitFor(bossGate.promise).tool("log_write", { message: "boss working" }).stop(),
      reply().text("boss saw it").stop(),
    );
    h.worker("OBJ-busy").enqueue(reply().text("child final").stop());
    const receipt = await h.runtime.sessions.send(a, "start");
    await h.llm.waitForRequests(3); // boss R1, the child's request, boss R2 (gated)
    await h.service.delivery.settled();
    const w = (await h.runtime.store.listSessions({ parentSessionId: a }))[0]!.id;
    const inbox = await h.runtime.store.listInbox(a);
    expect(inbox.map((i) => i.content)).toEqual([`[Message from worker (session: ${w})]: child final`]);
    expect(h.runtime.sessions.isRunning(a)).toBe(true);

    bossGate.resolve();
    expect((await receipt.result).content).toBe("boss saw it");
    const bossRequests = h.llm.completionRequests.filter((r) => systemPrompt(r).startsWith("ROLE=boss"));
    const tail = bossRequests[2]!.body.messages.slice(-2).map((m: { role: string; content: string }) => [m.role, m.content]);
    expect(tail).toEqual([
      ["tool", "boss working"],
      ["user", `[Message from worker (session: ${w})]: child final`],
    ]);
    expect(h.events.filter((e) => e.type === "chat.done" && e.sessionId === a)).toHaveLength(1);
  });

  it("full_steps on msg#1 delivers the log of assistant text and tool calls of the run", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const w = await spawnWorker(a, "w", "OBJ-steps");
    h.worker("OBJ-steps").enqueue(reply().text("looking").tool("log_write", { message: "m1" }).stop(), reply().text("all done").stop());
    const toA = h.nextUserMessage(a);
    await h.call(agentMessage, a, { sessionId: w, message: "go", async_inform: true, full_steps: true });
    expect(await toA).toBe(`[Message from worker (session: ${w})]: [assistant] looking\n[tool_call] log_write {"message":"m1"}\n[assistant] all done`);
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { createRuntime, type Runtime } from "../../../src/runtime.js";
import { memoryLogger } from "../../../src/base/log.js";
import type { MultiAgentService } from "../../../src/core/agents/service.js";
import type { VeilEvent } from "../../../src/base/events.js";
import { agentMessage } from "../../../src/core/agents/tools/agent-message.js";
import { agentSpawn } from "../../../src/core/agents/tools/agent-spawn.js";
import { reply } from "../../helpers/fake-llm.js";
import { createAgentsHarness, deferred, lastMessage, systemPrompt, tag, type AgentsHarness } from "./harness.js";

let h: AgentsHarness | undefined;
const extra: Runtime[] = [];
afterEach(async () => {
  for (const runtime of extra.splice(0)) await runtime.close();
  if (h) {
    // The first runtime was closed by the test (the "restart"); only the fake LLM and the workspace remain.
    await h.llm.close();
    h.ws.cleanup();
    h = undefined;
  }
});

/** A fresh runtime over the same workspace and SQLite file, as a restarted server builds it. */
async function restart(harness: AgentsHarness): Promise<Runtime> {
  const runtime = await createRuntime({ workspace: harness.ws.root, env: harness.env, log: memoryLogger() });
  extra.push(runtime);
  return runtime;
}

function service(runtime: Runtime): MultiAgentService {
  return runtime.multiAgent;
}

function nextUserMessage(runtime: Runtime, sessionId: string, prefix: string): Promise<string> {
  return new Promise((resolve) => {
    const off = runtime.bus.subscribe({ sessionId, types: ["chat.message"] }, (e) => {
      const event = e as VeilEvent & { role: string; content: string | null };
      if (event.role === "user" && (event.content ?? "").startsWith(prefix)) {
        off();
        resolve(event.content ?? "");
      }
    });
  });
}

/** Every message from worker `from` that reached `to`: delivered into history or still in its inbox. */
async function repliesFrom(runtime: Runtime, to: string, from: string): Promise<string[]> {
  const stored = (await runtime.store.listMessages(to)).filter((m) => m.role === "user").map((m) => m.content ?? "");
  const waiting = (await runtime.store.listInbox(to)).map((i) => i.content);
  return [...stored, ...waiting].filter((c) => c.startsWith(`[Message from worker (session: ${from})]`));
}

async function spawnWorker(harness: AgentsHarness, parent: string, objective: string): Promise<string> {
  const result = await harness.call(agentSpawn, parent, { agent: "worker", instance_name: "w", objective });
  expect(result.success).toBe(true);
  return tag(result.output, "session-id")!;
}

describe("async msg#1 replies survive a restart", () => {
  it("a seed still in the target's inbox at shutdown is answered, exactly once, by the run the next runtime recovers", async () => {
    h = await createAgentsHarness();
    const boss = await h.bossSession();
    const w = await spawnWorker(h, boss, "OBJ-restart-inbox");
    const gate = deferred();
    const worker = h.worker("OBJ-restart-inbox");
    worker.enqueue(reply().waitFor(gate.promise).text("warm-up done").stop());
    // The worker is busy with an unrelated run, so the async seed waits in its durable inbox.
    await h.runtime.sessions.send(w, "warm-up");
    await h.llm.waitForRequests(1);
    const sent = await h.call(agentMessage, boss, { sessionId: w, message: "the real task", async_inform: true });
    expect(sent.details?.dispatchRole).toBe("msg#1");
    expect((await h.runtime.store.listInbox(w)).map((i) => i.content)).toEqual([`[Message from boss (session: ${boss})]: the real task`]);

    await h.runtime.close();
    gate.resolve();

    const second = await restart(h);
    // The seed was neither consumed nor answered by the stopped runtime.
    expect(await second.store.listInbox(w)).toHaveLength(1);
    expect(await repliesFrom(second, boss, w)).toEqual([]);
    expect(service(second).delivery.activeChains()).toBe(1);

    worker.enqueue(reply().text("answer after restart").stop());
    const toBoss = nextUserMessage(second, boss, `[Message from worker (session: ${w})]`);
    await second.start();
    expect(await toBoss).toBe(`[Message from worker (session: ${w})]: answer after restart`);
    const workerCalls = h.llm.completionRequests.filter((r) => systemPrompt(r).startsWith("ROLE=worker"));
    expect(lastMessage(workerCalls.at(-1)!)).toBe(`[Message from boss (session: ${boss})]: the real task`);
    await service(second).delivery.settled();
    await second.sessions.waitIdle(boss);
    expect(await repliesFrom(second, boss, w)).toHaveLength(1);
    const audits = await second.store.listAudit({ sessionId: w, kind: "agent.delivered" });
    expect(audits.map((a) => [a.data.role, a.data.callerId])).toEqual([["seed", boss]]);

    // A further restart finds nothing left to answer.
    await second.close();
    extra.splice(extra.indexOf(second), 1);
    const third = await restart(h);
    expect(service(third).delivery.activeChains()).toBe(0);
    await third.start();
    await third.sessions.waitIdle(boss);
    expect(await repliesFrom(third, boss, w)).toHaveLength(1);
  });

  it("full_steps is kept with the waiting seed: the recovered reply is the steps log", async () => {
    h = await createAgentsHarness();
    const boss = await h.bossSession();
    const w = await spawnWorker(h, boss, "OBJ-restart-steps");
    const gate = deferred();
    const worker = h.worker("OBJ-restart-steps");
    worker.enqueue(reply().waitFor(gate.promise).text("busy").stop());
    await h.runtime.sessions.send(w, "warm-up");
    await h.llm.waitForRequests(1);
    await h.call(agentMessage, boss, { sessionId: w, message: "log it", async_inform: true, full_steps: true });
    await h.runtime.close();
    gate.resolve();

    const second = await restart(h);
    worker.enqueue(reply().text("step A").tool("log_write", { message: "noted" }).stop(), reply().text("all done").stop());
    const toBoss = nextUserMessage(second, boss, `[Message from worker (session: ${w})]`);
    await second.start();
    const got = await toBoss;
    expect(got).toContain("[assistant] step A");
    expect(got).toContain('[tool_call] log_write {"message":"noted"}');
    expect(got).toContain("[assistant] all done");
    await service(second).delivery.settled();
    await second.sessions.waitIdle(boss);
    expect(await repliesFrom(second, boss, w)).toHaveLength(1);
  });

  it("a seed whose run is cut by the shutdown answers with that run's end, delivered once after the restart", async () => {
    h = await createAgentsHarness();
    const boss = await h.bossSession();
    const w = await spawnWorker(h, boss, "OBJ-restart-midrun");
    const gate = deferred();
    h.worker("OBJ-restart-midrun").enqueue(reply().waitFor(gate.promise).text("never seen").stop());
    await h.call(agentMessage, boss, { sessionId: w, message: "long task", async_inform: true });
    await h.llm.waitForRequests(1);
    await h.runtime.close();
    gate.resolve();

    const second = await restart(h);
    // The cancelled run's reply could not start the boss's run during shutdown: it waits in the boss's inbox.
    expect((await second.store.listInbox(boss)).map((i) => i.content)).toEqual([
      `[Message from worker (session: ${w})]: (no text reply — the run ended with stop reason "cancelled")`,
    ]);
    const bossDone = new Promise<void>((resolve) => second.bus.subscribe({ sessionId: boss, types: ["chat.done"] }, () => resolve()));
    await second.start();
    await bossDone;
    expect(await repliesFrom(second, boss, w)).toHaveLength(1);
    expect(await second.store.listInbox(w)).toEqual([]);
  });
});

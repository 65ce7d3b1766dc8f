import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MultiAgentService } from "../src/core/agents/service.js";
import { memoryLogger } from "../src/base/log.js";
import { createRuntime, type Runtime } from "../src/runtime.js";
import { reply, startFakeLlm, type FakeLlm, type FakeRequest } from "../test/helpers/fake-llm.js";
import { median, withBaseline, type BenchResult } from "./types.js";

const LATENCY_ROUNDS = 30;
const FAN_OUT = 100;

function systemPrompt(req: FakeRequest): string {
  return String(req.body?.messages?.[0]?.content ?? "");
}

async function setup(llm: FakeLlm): Promise<{ runtime: Runtime; service: MultiAgentService; cleanup(): Promise<void> }> {
  const workspace = mkdtempSync(join(tmpdir(), "veil-bench-agents-"));
  for (const [name, prompt] of [["boss", "ROLE=boss"], ["worker", "ROLE=worker"]]) {
    mkdirSync(join(workspace, ".veil", "agents", name!), { recursive: true });
    writeFileSync(join(workspace, ".veil", "agents", name!, "agent.json"), JSON.stringify({ name, systemPrompt: prompt }));
  }
  writeFileSync(join(workspace, ".veil", "settings.json"), JSON.stringify({ limits: { maxLiveSessions: FAN_OUT + 50 } }));
  const runtime = await createRuntime({
    workspace,
    env: { VEIL_HOME: join(workspace, "home"), VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk-bench", VEIL_MODEL: "fake-model" },
    log: memoryLogger(),
    reloadAgents: false,
  });
  const service: MultiAgentService = runtime.multiAgent;
  return {
    runtime,
    service,
    async cleanup() {
      await runtime.close();
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}

/**
 * Spawn → the sub-agent's first model request, measured from the parent's agent_spawn
 * tool.start to the fake LLM receiving the child's request. Baseline: a message to an
 * existing idle session → its first model request.
 */
async function spawnLatency(): Promise<BenchResult[]> {
  const llm = await startFakeLlm();
  const { runtime, service, cleanup } = await setup(llm);
  try {
    const spawnSamples: number[] = [];
    const plainSamples: number[] = [];
    for (let round = 0; round < LATENCY_ROUNDS; round++) {
      // Baseline: a message to an idle session → its first request.
      const plain = await runtime.sessions.create({ agent: "worker" });
      let plainArrived!: (t: number) => void;
      const plainRequest = new Promise<number>((resolve) => (plainArrived = resolve));
      llm.respond(() => {
        plainArrived(performance.now());
        return reply().text("ok").stop();
      });
      const t0 = performance.now();
      const receipt = await runtime.sessions.send(plain.id, "hi");
      plainSamples.push((await plainRequest) - t0);
      await receipt.result;

      // Spawn through the parent's loop: tool.start(agent_spawn) → the child's first request.
      const parent = await runtime.sessions.create({ agent: "boss" });
      let spawnStart = 0;
      const off = runtime.bus.subscribe({ sessionId: parent.id, types: ["tool.start"] }, () => (spawnStart = performance.now()));
      let childArrived!: (t: number) => void;
      const childRequest = new Promise<number>((resolve) => (childArrived = resolve));
      let parentCalls = 0;
      llm.respond((req) => {
        if (systemPrompt(req).startsWith("ROLE=worker")) {
          childArrived(performance.now());
          return reply().text("child ok").stop();
        }
        if (parentCalls++ === 0) {
          return reply().tool("agent_spawn", { agent: "worker", instance_name: `w${round}`, objective: "bench", initial_message: { message: "go", async_inform: true } }).stop();
        }
        return reply().text("ack").stop();
      });
      await (await runtime.sessions.send(parent.id, "spawn one")).result;
      spawnSamples.push((await childRequest) - spawnStart);
      off();
      await service.delivery.settled();
      await runtime.sessions.waitIdle(parent.id);
    }
    return [
      withBaseline({
        name: "agent_spawn → sub-agent's first model request (median)",
        value: median(spawnSamples),
        unit: "ms",
        baseline: { name: "message to an idle session → first model request", value: median(plainSamples) },
        note: `${LATENCY_ROUNDS} rounds, fake LLM over HTTP`,
      }),
    ];
  } finally {
    await cleanup();
    await llm.close();
  }
}

/** 100 sub-agents spawned at once under one parent, all running together; every reply must arrive exactly once. */
async function fanOut(): Promise<BenchResult[]> {
  const llm = await startFakeLlm();
  const { runtime, service, cleanup } = await setup(llm);
  try {
    let releaseWorkers!: () => void;
    const allRunning = new Promise<void>((resolve) => (releaseWorkers = resolve));
    let workerRequests = 0;
    let parentCalls = 0;
    let heapAtPeak = 0;
    llm.respond((req) => {
      if (systemPrompt(req).startsWith("ROLE=worker")) {
        const objective = /## Objective\n(\S+)/.exec(systemPrompt(req))?.[1] ?? "?";
        if (++workerRequests === FAN_OUT) {
          heapAtPeak = process.memoryUsage().heapUsed;
          releaseWorkers();
        }
        return reply().waitFor(allRunning).text(`done ${objective}`).stop();
      }
      if (parentCalls++ === 0) {
        let r = reply();
        for (let i = 0; i < FAN_OUT; i++) {
          r = r.tool("agent_spawn", { agent: "worker", instance_name: `w${i}`, objective: `task-${i}`, initial_message: { message: `do task ${i}`, async_inform: true } });
        }
        return r.stop();
      }
      return reply().text("ack").stop();
    });
    (globalThis as { gc?: () => void }).gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const parent = await runtime.sessions.create({ agent: "boss" });
    const t0 = performance.now();
    await runtime.sessions.send(parent.id, "fan out");
    await allRunning;
    // Every chain settles, then the parent drains whatever was queued for it.
    await service.delivery.settled();
    for (;;) {
      await runtime.sessions.waitIdle(parent.id);
      if ((await runtime.store.listInbox(parent.id)).length === 0 && !runtime.sessions.isRunning(parent.id)) break;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    const elapsed = performance.now() - t0;

    const children = await runtime.store.listSessions({ parentSessionId: parent.id });
    const delivered = (await runtime.store.listMessages(parent.id)).filter((m) => m.role === "user" && m.content?.startsWith("[Message from worker"));
    const fromChild = new Map<string, number>();
    for (const m of delivered) {
      const sid = /\(session: ([^)]+)\)/.exec(m.content!)?.[1] ?? "?";
      fromChild.set(sid, (fromChild.get(sid) ?? 0) + 1);
    }
    const duplicated = [...fromChild.values()].filter((n) => n > 1).length;
    const missing = children.filter((c) => !fromChild.has(c.id)).length;
    if (children.length !== FAN_OUT || missing > 0 || duplicated > 0) {
      throw new Error(`fan-out check failed: ${children.length} children, ${delivered.length} replies delivered, ${missing} missing, ${duplicated} duplicated`);
    }
    const perAgentKb = (heapAtPeak - heapBefore) / FAN_OUT / 1024;
    return [
      { name: `${FAN_OUT} sub-agents at once under one parent: spawn → every reply delivered`, value: elapsed, unit: "ms", note: `${delivered.length} replies, 0 missing, 0 duplicated; parent model calls ${parentCalls}` },
      { name: `heap growth per running sub-agent (${FAN_OUT} running)`, value: perAgentKb, unit: "KiB", note: `heap ${(heapBefore / 1048576).toFixed(1)} → ${(heapAtPeak / 1048576).toFixed(1)} MiB; rss ${(process.memoryUsage().rss / 1048576).toFixed(0)} MiB` },
    ];
  } finally {
    await cleanup();
    await llm.close();
  }
}

export async function run(): Promise<BenchResult[]> {
  return [...(await spawnLatency()), ...(await fanOut())];
}

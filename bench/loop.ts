import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRuntime } from "../src/runtime.js";
import { memoryLogger } from "../src/base/log.js";
import type { LlmClient, StreamEvent } from "../src/llm/types.js";
import { ZERO_USAGE } from "../src/store/store.js";
import { startFakeLlm, reply } from "../test/helpers/fake-llm.js";
import { median, withBaseline, type BenchResult } from "./types.js";

const STEPS = 20;
const ROUNDS = 8;
const WARM_ROUNDS = 3;

/**
 * A zero-latency in-process model: every call asks for one log_write until the
 * last, and records when each request starts and each response ends.
 */
export function scriptedClient(steps: number) {
  const requestStarts: number[] = [];
  const responseEnds: number[] = [];
  let calls = 0;
  const client: LlmClient = {
    async *stream(): AsyncIterable<StreamEvent> {
      requestStarts.push(performance.now());
      const n = calls++;
      const usage = { ...ZERO_USAGE, prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 };
      if (n < steps) {
        const toolCalls = [{ id: `call_${n}`, name: "log_write", arguments: JSON.stringify({ message: `step ${n}` }) }];
        yield { type: "tool_call_start", index: 0, id: toolCalls[0]!.id, name: "log_write" };
        responseEnds.push(performance.now());
        yield { type: "done", message: { content: null, thinking: null, toolCalls }, finishReason: "tool_calls", usage, model: "bench" };
      } else {
        responseEnds.push(performance.now());
        yield { type: "done", message: { content: "done", thinking: null, toolCalls: [] }, finishReason: "stop", usage, model: "bench" };
      }
    },
  };
  return { client, requestStarts, responseEnds };
}

async function loopOverhead(): Promise<BenchResult[]> {
  const workspace = mkdtempSync(join(tmpdir(), "veil-bench-"));
  try {
    // Rounds of one process: the first ones still run V8's warm-up of the step's code (how
    // long that lasts depends on what else the process ran before: loading AJV at the first
    // call shortened it), so the steady figure is taken after them and the early one beside it.
    const samples: number[] = [];
    const early: number[] = [];
    const toolTimes: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const scripted = scriptedClient(STEPS);
      const runtime = await createRuntime({ workspace, env: { VEIL_HOME: join(workspace, "home"), VEIL_MODEL: "bench" }, llm: scripted.client, log: memoryLogger() });
      const toolDurations: number[] = [];
      runtime.bus.subscribe({ types: ["tool.end"] }, (e) => toolDurations.push((e as { durationMs: number }).durationMs));
      const session = await runtime.sessions.create({ agent: "default" });
      await (await runtime.sessions.send(session.id, "go")).result;
      for (let i = 1; i < scripted.requestStarts.length; i++) {
        const gap = scripted.requestStarts[i]! - scripted.responseEnds[i - 1]!;
        (round < WARM_ROUNDS ? early : samples).push(gap);
      }
      toolTimes.push(...toolDurations);
      await runtime.close();
    }
    // Tool time is included in the gap; durationMs is rounded, so report both.
    const gap = median(samples);
    const tool = median(toolTimes);

    const llm = await startFakeLlm();
    llm.respond(() => reply().text("x").stop());
    const roundTrips: number[] = [];
    for (let i = 0; i < 30; i++) {
      const t0 = performance.now();
      const res = await fetch(`${llm.baseUrl}/chat/completions`, { method: "POST", body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] }), headers: { "content-type": "application/json" } });
      await res.text();
      roundTrips.push(performance.now() - t0);
    }
    await llm.close();
    const roundTrip = median(roundTrips);
    return [
      withBaseline({
        name: "loop overhead per step (response end → next request, incl. log_write)",
        value: gap,
        unit: "ms",
        baseline: { name: "one zero-latency model round trip over loopback HTTP", value: roundTrip },
        target: "< 2 ms median",
        note: `median of ${samples.length} steps after ${early.length} warm-up steps; log_write itself (rounded) ${tool} ms`,
      }),
      withBaseline({
        name: `… the first ${early.length} steps of a process`,
        value: median(early),
        unit: "ms",
        baseline: { name: "the steady steps", value: gap },
      }),
    ];
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

/** Heap per idle session that has had one turn. */
async function idleSessionMemory(): Promise<BenchResult[]> {
  const workspace = mkdtempSync(join(tmpdir(), "veil-bench-mem-"));
  const runtime = await createRuntime({
    workspace,
    env: { VEIL_HOME: join(workspace, "home"), VEIL_MODEL: "bench" },
    overrides: { limits: { maxLiveSessions: 100_000 } } as never,
    llm: { stream: () => scriptedClient(0).client.stream({} as never) },
    log: memoryLogger(),
  });
  const N = 300;
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < N; i++) {
    const s = await runtime.sessions.create({ agent: "default" });
    await (await runtime.sessions.send(s.id, "hi")).result;
  }
  gc?.();
  const after = process.memoryUsage().heapUsed;
  await runtime.close();
  rmSync(workspace, { recursive: true, force: true });
  return [{ name: "heap per idle session (after one turn)", value: Math.max(0, (after - before) / N / 1024), unit: "KiB", note: gc ? "with --expose-gc" : "without gc(): an upper bound" }];
}

export async function run(): Promise<BenchResult[]> {
  return [...(await loopOverhead()), ...(await idleSessionMemory())];
}

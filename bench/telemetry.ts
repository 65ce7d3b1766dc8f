import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRuntime, type RuntimeMode } from "../src/runtime.js";
import { memoryLogger } from "../src/base/log.js";
import { createTracing } from "../src/core/telemetry/tracing.js";
import { ZERO_USAGE } from "../src/store/store.js";
import { startOtlpCollector } from "../test/helpers/otlp-collector.js";
import { scriptedClient } from "./loop.js";
import { median, withBaseline, type BenchResult } from "./types.js";

const STEPS = 20;
const ROUNDS = 12;
const WARM_ROUNDS = 3;

interface Setup {
  name: string;
  mode: RuntimeMode;
  env: Record<string, string>;
}

/**
 * Per-step overhead of the loop (a zero-latency model's response end → the next request,
 * one log_write between) with no telemetry, with metrics (a server's default), and with
 * traces exported to a loopback collector, the three measured in turns in one process.
 */
export async function run(): Promise<BenchResult[]> {
  const workspace = mkdtempSync(join(tmpdir(), "veil-bench-telemetry-"));
  const collector = await startOtlpCollector();
  const base = { VEIL_HOME: join(workspace, "home"), VEIL_MODEL: "bench" };
  const setups: Setup[] = [
    { name: "no telemetry (one-shot runtime)", mode: "oneshot", env: base },
    { name: "metrics (a serving runtime)", mode: "serve", env: base },
    { name: "metrics and traces (OTLP http/protobuf to loopback)", mode: "serve", env: { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: "1000" } },
  ];
  const gaps = new Map<string, number[]>(setups.map((s) => [s.name, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const setup of setups) {
        const scripted = scriptedClient(STEPS);
        const runtime = await createRuntime({ workspace, mode: setup.mode, env: setup.env, llm: scripted.client, log: memoryLogger() });
        const session = await runtime.sessions.create({ agent: "default" });
        await (await runtime.sessions.send(session.id, "go")).result;
        if (round >= WARM_ROUNDS) {
          for (let i = 1; i < scripted.requestStarts.length; i++) gaps.get(setup.name)!.push(scripted.requestStarts[i]! - scripted.responseEnds[i - 1]!);
        }
        await runtime.close();
      }
    }
  } finally {
    await collector.close();
    rmSync(workspace, { recursive: true, force: true });
  }
  const [none, metrics, traces] = setups.map((s) => median(gaps.get(s.name)!));
  const steps = gaps.get(setups[0]!.name)!.length;
  const spans = await spanCostPerStep();
  return [
    withBaseline({
      name: "trace bookkeeping per step (one chat and one execute_tool span, exported to a closed port)",
      value: spans,
      unit: "ms",
      baseline: { name: "per-step overhead with metrics, above", value: metrics! },
      target: "≤ 0.05×",
      note: "CPU of the spans alone, steady state: the loop figures below move more with the machine's load than with this",
    }),
    withBaseline({ name: `per-step overhead, ${setups[1]!.name}`, value: metrics!, unit: "ms", baseline: { name: setups[0]!.name, value: none! }, note: `median of ${steps} steps each` }),
    withBaseline({ name: `per-step overhead, ${setups[2]!.name}`, value: traces!, unit: "ms", baseline: { name: setups[1]!.name, value: metrics! }, target: "≤ 1.05×", note: `median of ${steps} steps each; ${collector.exports.length} exports received` }),
    ...(await cpuPerStep(setups.slice(1))),
  ];
}

const CPU_ROUNDS = 14;
const CPU_WARM_ROUNDS = 4;

/**
 * This process's CPU per step of a turn (the step's own work, the spans, their batching and
 * encoding), metrics-only against traced, one long-lived runtime each taking turns: long
 * turns (100 steps) give the per-step cost, 2-step turns show what each turn adds.
 */
async function cpuPerStep(setups: Setup[]): Promise<BenchResult[]> {
  const workspace = mkdtempSync(join(tmpdir(), "veil-bench-telemetry-cpu-"));
  let script = scriptedClient(0);
  const llm = { stream: (...args: Parameters<typeof script.client.stream>) => script.client.stream(...args) };
  const runtimes = await Promise.all(setups.map((setup, i) => createRuntime({ workspace, mode: setup.mode, env: { ...setup.env, VEIL_HOME: join(workspace, `home-${i}`) }, llm, log: memoryLogger() })));
  const results: BenchResult[] = [];
  try {
    for (const steps of [100, 2]) {
      const cpu: number[][] = runtimes.map(() => []);
      for (let round = 0; round < CPU_ROUNDS; round++) {
        for (const [i, runtime] of runtimes.entries()) {
          script = scriptedClient(steps);
          const session = await runtime.sessions.create({ agent: "default" });
          const before = process.cpuUsage();
          await (await runtime.sessions.send(session.id, "go")).result;
          const used = process.cpuUsage(before);
          if (round >= CPU_WARM_ROUNDS) cpu[i]!.push((used.user + used.system) / 1000 / steps);
        }
      }
      const [plain, traced] = cpu.map(median);
      results.push(
        withBaseline({
          name: steps === 100 ? `CPU per step, ${setups[1]!.name}, 100-step turns` : `… 2-step turns (what each turn adds shows)`,
          value: traced!,
          unit: "ms",
          baseline: { name: setups[0]!.name, value: plain! },
          ...(steps === 100 ? { target: "≤ 1.05×" } : {}),
          note: `median of ${CPU_ROUNDS - CPU_WARM_ROUNDS} turns each, alternating, one runtime each, traces to a loopback collector`,
        }),
      );
    }
  } finally {
    await Promise.all(runtimes.map((runtime) => runtime.close()));
    rmSync(workspace, { recursive: true, force: true });
  }
  return results;
}

/** Milliseconds one step's spans cost (the events a native step reports), after warm-up. */
async function spanCostPerStep(): Promise<number> {
  const silent = { debug() {}, info() {}, warn() {}, error() {} };
  const tracing = await createTracing({ url: "http://127.0.0.1:9/v1/traces", protocol: "http/protobuf", headers: {}, serviceName: "bench", scheduledDelayMs: 200, exportTimeoutMs: 500 }, silent);
  const usage = { ...ZERO_USAGE, prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 };
  const call = { id: "call", name: "log_write", arguments: "{}" };
  const perStep: number[] = [];
  for (let round = 0; round < 8; round++) {
    const turn = tracing.turnStarted({ sessionId: "sess_bench", parent: null, costOf: () => null });
    turn.prepared({ agent: "default", modelKey: "bench", engine: "openai" });
    const started = performance.now();
    const N = 500;
    for (let i = 0; i < N; i++) {
      const id = `call_${round}_${i}`;
      turn.event({ type: "model_call_started", model: "bench" });
      turn.event({ type: "model_usage", usage, model: "bench" });
      turn.event({ type: "assistant_message", message: { content: null, thinking: null, toolCalls: [{ ...call, id }] }, finishReason: "tool_calls", usage, final: false });
      turn.event({ type: "tool_started", call: { ...call, id }, input: {} });
      turn.event({ type: "tool_finished", result: { call: { ...call, id }, output: "ok", success: true, state: "done", durationMs: 0 }, input: {} });
    }
    if (round >= 3) perStep.push((performance.now() - started) / N);
    turn.ended({ content: null, finishReason: "stop", stopReason: "stop", messageId: null, usage, iterations: N });
    // Let the batch go out (and fail) between rounds, as it does between a server's turns.
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await tracing.close();
  return median(perStep);
}

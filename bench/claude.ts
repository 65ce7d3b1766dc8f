import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRuntime, type Runtime } from "../src/runtime.js";
import { memoryLogger } from "../src/base/log.js";
import { reply, startFakeLlm } from "../test/helpers/fake-llm.js";
import { message, startFakeAnthropic } from "../test/helpers/fake-anthropic.js";
import { median, withBaseline, type BenchResult } from "./types.js";

/** Tool steps per turn (each a log_write) before the final answer. */
const STEPS = 5;
const ROUNDS = 3;

interface Timing {
  /** send() → first model request at the fake server. */
  start: number;
  /** Gaps between consecutive model requests (model answer, tool, recording, next request). */
  steps: number[];
}

async function runtimeFor(workspace: string, settings: object, env: Record<string, string>): Promise<Runtime> {
  mkdirSync(join(workspace, ".veil"), { recursive: true });
  writeFileSync(join(workspace, ".veil", "settings.json"), JSON.stringify(settings));
  return createRuntime({ workspace, env, log: memoryLogger(), mode: "oneshot" });
}

async function openaiTurn(workspace: string): Promise<Timing> {
  const llm = await startFakeLlm();
  for (let i = 0; i < STEPS; i++) llm.enqueue(reply().tool("log_write", { message: `step ${i}` }).stop());
  llm.enqueue(reply().text("done").stop());
  const runtime = await runtimeFor(workspace, {}, { VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "x", VEIL_MODEL: "bench", VEIL_HOME: join(workspace, "home") });
  try {
    const session = await runtime.sessions.create({ agent: "default" });
    const t0 = Date.now();
    await (await runtime.sessions.send(session.id, "go")).result;
    return timing(t0, llm.completionRequests.map((r) => r.time));
  } finally {
    await runtime.close();
    await llm.close();
  }
}

async function claudeTurn(workspace: string): Promise<Timing> {
  const api = await startFakeAnthropic();
  for (let i = 0; i < STEPS; i++) api.enqueue(message().tool("mcp__veil__log_write", { message: `step ${i}` }).stop());
  api.enqueue(message().text("done").stop());
  const home = join(workspace, "home");
  mkdirSync(home, { recursive: true });
  const runtime = await runtimeFor(workspace, { claudeCli: { baseUrl: api.baseUrl, apiKey: "sk-bench" } }, { PATH: process.env.PATH ?? "", HOME: home, VEIL_HOME: home });
  try {
    const session = await runtime.sessions.create({ agent: "default", model: "cc/claude-bench" });
    const t0 = Date.now();
    const result = await (await runtime.sessions.send(session.id, "go")).result;
    if (result.stopReason !== "stop") throw new Error(`claude-cli bench turn ended with ${result.stopReason}: ${result.error?.message}`);
    return timing(t0, api.messageRequests.map((r) => r.time));
  } finally {
    await runtime.close();
    await api.close();
  }
}

function timing(t0: number, requestTimes: number[]): Timing {
  const steps: number[] = [];
  for (let i = 1; i < requestTimes.length; i++) steps.push(requestTimes[i]! - requestTimes[i - 1]!);
  return { start: requestTimes[0]! - t0, steps };
}

/**
 * The same scripted turn (5 log_write steps, then an answer) through the openai engine
 * (fake OpenAI-compatible server) and the claude-cli engine (real SDK + `claude` binary,
 * fake Anthropic server): per-step overhead and the turn start cost, as ratios.
 */
export async function run(): Promise<BenchResult[]> {
  const openai: Timing[] = [];
  const claude: Timing[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const a = mkdtempSync(join(tmpdir(), "veil-bench-oa-"));
    const b = mkdtempSync(join(tmpdir(), "veil-bench-cc-"));
    try {
      openai.push(await openaiTurn(a));
      claude.push(await claudeTurn(b));
    } finally {
      rmSync(a, { recursive: true, force: true });
      rmSync(b, { recursive: true, force: true });
    }
  }
  const openaiStep = median(openai.flatMap((t) => t.steps));
  const claudeStep = median(claude.flatMap((t) => t.steps));
  const openaiStart = median(openai.map((t) => t.start));
  const claudeStart = median(claude.map((t) => t.start));
  return [
    withBaseline({
      name: "claude-cli per step (model request → next model request, one log_write)",
      value: claudeStep,
      unit: "ms",
      baseline: { name: "openai engine, same script", value: openaiStep },
      note: `median of ${claude.flatMap((t) => t.steps).length} steps; the fakes answer at once`,
    }),
    withBaseline({
      name: "claude-cli turn start (send → first model request; starts the claude binary)",
      value: claudeStart,
      unit: "ms",
      baseline: { name: "openai engine, same script", value: openaiStart },
      note: `median of ${ROUNDS} turns`,
    }),
  ];
}

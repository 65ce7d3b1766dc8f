import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRuntime } from "../src/runtime.js";
import { memoryLogger } from "../src/base/log.js";
import type { LlmClient, StreamEvent } from "../src/llm/types.js";
import { ZERO_USAGE } from "../src/store/store.js";
import { median, withBaseline, type BenchResult } from "./types.js";

const KINDS = { read_file: { path: "notes.txt" }, bash: { command: "echo hi" }, grep: { pattern: "needle" } } as const;
type Kind = keyof typeof KINDS;
const ROUNDS = 10;
const PROCESSES = 3;
/** The model's time to answer: what the warm-ups may use (a real model takes far longer). */
const MODEL_LATENCY_MS = 20;

/** The call order: each kind once (its first call in the process), then ROUNDS rounds of all kinds. */
function script(): Kind[] {
  const kinds = Object.keys(KINDS) as Kind[];
  return [...kinds, ...Array.from({ length: ROUNDS }, () => kinds).flat()];
}

/** In a fresh process: one turn of the script; prints each step's response end → next request gap. */
async function child(): Promise<void> {
  const workspace = mkdtempSync(join(tmpdir(), "veil-bench-first-"));
  writeFileSync(join(workspace, "notes.txt"), "a needle in\na haystack\n");
  const steps = script();
  const starts: number[] = [];
  const ends: number[] = [];
  let n = 0;
  const usage = { ...ZERO_USAGE, prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 };
  const llm: LlmClient = {
    async *stream(): AsyncIterable<StreamEvent> {
      starts.push(performance.now());
      const kind = steps[n];
      const id = `call_${n++}`;
      await new Promise((resolve) => setTimeout(resolve, MODEL_LATENCY_MS));
      ends.push(performance.now());
      if (!kind) {
        yield { type: "done", message: { content: "done", thinking: null, toolCalls: [] }, finishReason: "stop", usage, model: "bench" };
        return;
      }
      const toolCalls = [{ id, name: kind, arguments: JSON.stringify(KINDS[kind]) }];
      yield { type: "done", message: { content: null, thinking: null, toolCalls }, finishReason: "tool_calls", usage, model: "bench" };
    },
  };
  const runtime = await createRuntime({ workspace, env: { VEIL_HOME: join(workspace, "home"), VEIL_MODEL: "bench" }, llm, log: memoryLogger() });
  const session = await runtime.sessions.create({ agent: "default" });
  await (await runtime.sessions.send(session.id, "go")).result;
  await runtime.close();
  rmSync(workspace, { recursive: true, force: true });
  const gaps = steps.map((kind, i) => ({ kind, ms: starts[i + 1]! - ends[i]! }));
  process.stdout.write(JSON.stringify(gaps));
}

/** First vs steady call per tool kind, each first call in a fresh process. */
export async function run(): Promise<BenchResult[]> {
  const self = fileURLToPath(import.meta.url);
  const first: Record<string, number[]> = {};
  const steady: Record<string, number[]> = {};
  for (let p = 0; p < PROCESSES; p++) {
    // HOME without a ~/.bashrc: this machine's wedges bash, which measures the fallback, not Veil.
    const home = mkdtempSync(join(tmpdir(), "veil-bench-home-"));
    const out = spawnSync(process.execPath, [self, "--child"], { encoding: "utf8", env: { ...process.env, HOME: home } });
    rmSync(home, { recursive: true, force: true });
    if (out.status !== 0) throw new Error(`first-calls child failed: ${out.stderr}`);
    const seen = new Set<string>();
    for (const { kind, ms } of JSON.parse(out.stdout) as { kind: Kind; ms: number }[]) {
      const bucket = seen.has(kind) ? steady : first;
      seen.add(kind);
      (bucket[kind] ??= []).push(ms);
    }
  }
  return (Object.keys(KINDS) as Kind[]).map((kind) =>
    withBaseline({
      name: `first ${kind} of a process (response end → next request)`,
      value: median(first[kind]!),
      unit: "ms",
      baseline: { name: `steady ${kind}`, value: median(steady[kind]!) },
      target: "≤ 3× steady",
      note: `median of ${PROCESSES} processes; model answers after ${MODEL_LATENCY_MS} ms`,
    }),
  );
}

if (process.argv.includes("--child")) void child();

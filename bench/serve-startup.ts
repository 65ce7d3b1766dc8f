import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { median, withBaseline, type BenchResult } from "./types.js";

const RUNS = 5;
/** VEIL_BENCH_MAIN=path/to/dist/src/main.js times another build (an older commit's) the same way, for a before/after figure. */
const MAIN = process.env.VEIL_BENCH_MAIN ?? fileURLToPath(new URL("../src/main.js", import.meta.url));
const FLOOR = "require('http').createServer().listen(0,()=>process.exit())";

/**
 * `veil serve` (the package's bin) in a fresh workspace: spawn → the first `GET /health`
 * answered, against the floor of any Node server (spawn → a bare http server listening,
 * then exit). The two alternate so load on the machine hits both alike; the first pair is a
 * discarded warm-up, which also writes veil's V8 code cache (src/cli/boot.ts) as a user's
 * first start does.
 */
export async function run(): Promise<BenchResult[]> {
  const root = mkdtempSync(join(tmpdir(), "veil-bench-serve-startup-"));
  const veil: number[] = [];
  const floor: number[] = [];
  try {
    for (let i = 0; i <= RUNS; i++) {
      const v = await timeToHealth(join(root, `ws-${i}`), join(root, "home"));
      const f = await timeToExit(["-e", FLOOR]);
      if (i === 0) continue;
      veil.push(v);
      floor.push(f);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return [
    withBaseline({
      name: "veil serve start-up (spawn → first /health answered)",
      value: median(veil),
      unit: "ms",
      baseline: { name: "bare node http server listening (spawn → exit)", value: median(floor) },
      target: "≤ 2000 ms",
      note: `median of ${RUNS} runs each, alternating; ${MAIN}`,
    }),
  ];
}

async function timeToHealth(workspace: string, home: string): Promise<number> {
  mkdirSync(workspace, { recursive: true });
  mkdirSync(home, { recursive: true });
  const env = { ...process.env, VEIL_HOME: home, HOME: home, VEIL_SECRET: "bench-secret", VEIL_BASE_URL: "http://127.0.0.1:9/v1", VEIL_API_KEY: "x", VEIL_MODEL: "m" };
  const started = performance.now();
  const child = spawn(process.execPath, [MAIN, "serve", "--port", "0", "--workspace", workspace], { cwd: workspace, env, stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (data: Buffer) => {
        out += data.toString("utf8");
        const found = /listening on (http:\/\/\S+)/.exec(out);
        if (found) resolve(found[1]!);
      });
      child.once("exit", (code) => reject(new Error(`veil serve exited with ${code} before listening`)));
    });
    const response = await fetch(`${url}/health`);
    if (!response.ok) throw new Error(`/health answered ${response.status}`);
    await response.json();
    return performance.now() - started;
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}

function timeToExit(args: string[]): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, args, { stdio: "ignore" });
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => (code === 0 ? resolve(performance.now() - started) : reject(new Error(`node ${args.join(" ")} exited with ${code}`))));
  });
}

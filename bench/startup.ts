import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { median, withBaseline, type BenchResult } from "./types.js";

const RUNS = 11;
const STREAM = 'data: {"id":"x","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';

interface Timing {
  /** spawn → the first request's headers reach the server */
  request: number;
  /** spawn → the process has exited */
  exit: number;
}

/**
 * `veil run "hello"` (the package's bin, dist/src/main.js) against a bare `node -e fetch(...)`
 * to the same zero-latency server: spawn → first model request, and spawn → exit. The two
 * alternate, so load on the machine hits both alike; the first pair is a discarded warm-up,
 * which also writes veil's V8 code cache into the bench's $VEIL_HOME (src/cli/boot.ts), as a
 * user's first run does. A third run each round gets an empty $VEIL_HOME: start-up without
 * the cache (the first run after an install or upgrade).
 */
export async function run(): Promise<BenchResult[]> {
  const main = fileURLToPath(new URL("../src/main.js", import.meta.url));
  // The homes sit beside the workspace, not in it: each run checkpoints its workspace, and a
  // workspace holding the other runs' homes had their checkpoint mirrors copied again and again
  // (tens of GB after a few rounds).
  const root = mkdtempSync(join(tmpdir(), "veil-bench-startup-"));
  const workspace = join(root, "workspace");
  mkdirSync(workspace);
  mkdirSync(join(root, "home"), { recursive: true });
  let arrived: (() => void) | undefined;
  const server = createServer((req, res) => {
    arrived?.();
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(STREAM);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const env = { ...process.env, VEIL_BASE_URL: `http://127.0.0.1:${port}/v1`, VEIL_API_KEY: "x", VEIL_MODEL: "m", VEIL_HOME: join(root, "home") };
  const measure = async (args: string[], home = env.VEIL_HOME): Promise<Timing> => {
    const arrival = new Promise<number>((resolve) => (arrived = () => resolve(performance.now())));
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { cwd: workspace, env: { ...env, VEIL_HOME: home }, stdio: "ignore" });
    const exited = new Promise<number>((resolve, reject) => {
      child.on("exit", (code) => (code === 0 ? resolve(performance.now()) : reject(new Error(`${args.join(" ")} exited with ${code}`))));
    });
    const request = (await Promise.race([arrival, exited.then(() => Promise.reject(new Error(`${args.join(" ")} exited before its request`)))])) - t0;
    return { request, exit: (await exited) - t0 };
  };
  const bareScript = `fetch("http://127.0.0.1:${port}/v1/chat/completions",{method:"POST",body:"{}"}).then(r=>r.text())`;
  const veil: Timing[] = [];
  const bare: Timing[] = [];
  const uncached: Timing[] = [];
  try {
    for (let i = 0; i <= RUNS; i++) {
      const v = await measure([main, "run", "hello"]);
      const b = await measure(["-e", bareScript]);
      const emptyHome = join(root, `home-${i}`);
      mkdirSync(emptyHome);
      const u = await measure([main, "run", "hello"], emptyHome);
      if (i === 0) continue;
      veil.push(v);
      bare.push(b);
      uncached.push(u);
    }
  } finally {
    server.close();
    rmSync(root, { recursive: true, force: true });
  }
  const note = `median of ${RUNS} runs each, alternating`;
  return [
    withBaseline({
      name: "veil run start-up (spawn → first model request)",
      value: median(veil.map((t) => t.request)),
      unit: "ms",
      baseline: { name: "bare `node -e fetch(...)` to the same server", value: median(bare.map((t) => t.request)) },
      target: "≤ 1.3× bare",
      note,
    }),
    withBaseline({
      name: "veil run start-up without its code cache (a first run)",
      value: median(uncached.map((t) => t.request)),
      unit: "ms",
      baseline: { name: "bare `node -e fetch(...)` to the same server", value: median(bare.map((t) => t.request)) },
      note,
    }),
    withBaseline({
      name: "veil run one-turn total (spawn → exit)",
      value: median(veil.map((t) => t.exit)),
      unit: "ms",
      baseline: { name: "bare `node -e fetch(...)` to exit", value: median(bare.map((t) => t.exit)) },
      note,
    }),
  ];
}

import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { randomIds } from "../src/base/ids.js";
import { Resources } from "../src/core/resources.js";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { glob } from "../src/tools/builtin/glob.js";
import { grep } from "../src/tools/builtin/grep.js";
import { RipgrepLocator } from "../src/tools/shared/ripgrep.js";
import type { RegisteredTool, ToolContext } from "../src/tools/types.js";
import { median, withBaseline, type BenchResult } from "./types.js";
import { benchConfig, benchToolContext } from "./context.js";

const FILES = 50_000;
const FILES_PER_DIR = 100;
const RUNS = 5;
const EXTENSIONS = ["ts", "js", "md", "json", "txt"];

/** grep and glob on a 50,000-file tree against bare rg running the same query. */
export async function run(): Promise<BenchResult[]> {
  const rg = await new RipgrepLocator().locate();
  if (!rg) {
    return [{ name: "files: grep/glob vs rg", value: 0, unit: "ms", note: "skipped: rg is not installed (the tools use the pure-Node fallback)" }];
  }
  const root = realpathSync(mkdtempSync(join(tmpdir(), "veil-bench-files-")));
  const store = SqliteStore.open(join(root, "bench.db"));
  const runtime = new Resources();
  const session = new Resources();
  try {
    buildTree(join(root, "ws"));
    const ctx = benchToolContext(benchConfig(join(root, "ws")), store, runtime, session);
    const workspace = ctx.workspace;
    const rgBase = ["--no-config", "--hidden", "--no-ignore", "--color", "never"];

    const [grepTool, grepRg] = await timePair(
      () => callTool(grep, { pattern: "needle_\\d+", path: workspace, recursive: true }, ctx),
      () => spawnDrain(rg, [...rgBase, "-i", "-n", "--glob", "!.git", "--glob", "!node_modules", "needle_\\d+", "."], workspace),
    );
    const [globTool, globRg] = await timePair(
      () => callTool(glob, { pattern: "**/*.ts", limit: 50 }, ctx),
      () => spawnDrain(rg, [...rgBase, "--files", "--glob", "**/*.ts", "."], workspace),
    );
    const [narrowTool, narrowRg] = await timePair(
      () => callTool(glob, { pattern: "**/file3*.ts", limit: 50 }, ctx),
      () => spawnDrain(rg, [...rgBase, "--files", "--glob", "**/file3*.ts", "."], workspace),
    );

    const fallback = { ...ctx, services: { ripgrepPath: null } };
    const grepNode = await timeIt(() => callTool(grep, { pattern: "needle_\\d+", path: workspace, recursive: true }, fallback), 2);
    const globNode = await timeIt(() => callTool(glob, { pattern: "**/*.ts", limit: 50 }, fallback), 2);

    const statNote = "each match needs one stat() for the mtime order, which bare rg --files never does; that stat is the floor";
    return [
      withBaseline({ name: "grep tool, 50k files (recursive regex)", value: grepTool, unit: "ms", baseline: { name: "rg", value: grepRg }, target: "≤ 1.2×" }),
      withBaseline({
        name: "glob tool, 50k files (**/*.ts: 10k matches, mtime-sorted)",
        value: globTool,
        unit: "ms",
        baseline: { name: "rg --files --glob", value: globRg },
        target: "≤ 1.5×",
        note: statNote,
      }),
      withBaseline({
        name: "glob tool, 50k files (**/file3*.ts: 2.2k matches, mtime-sorted)",
        value: narrowTool,
        unit: "ms",
        baseline: { name: "rg --files --glob", value: narrowRg },
        target: "≤ 1.5×",
      }),
      withBaseline({ name: "grep, pure-Node fallback (informational)", value: grepNode, unit: "ms", baseline: { name: "rg", value: grepRg } }),
      withBaseline({ name: "glob, pure-Node fallback (informational)", value: globNode, unit: "ms", baseline: { name: "rg --files --glob", value: globRg } }),
    ];
  } finally {
    await session.dispose();
    await runtime.dispose();
    await store.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** 500 folders of 100 small files; one file in 50 holds a `needle_N` line. */
function buildTree(ws: string): void {
  for (let i = 0; i < FILES; i++) {
    const dir = join(ws, `pkg${Math.floor(i / (FILES_PER_DIR * 10))}`, `mod${Math.floor(i / FILES_PER_DIR)}`);
    if (i % FILES_PER_DIR === 0) mkdirSync(dir, { recursive: true });
    const lines = Array.from({ length: 30 }, (_, n) => `line ${n} of file ${i}: lorem ipsum dolor sit amet`);
    if (i % 50 === 0) lines[15] = `const needle_${i} = true;`;
    writeFileSync(join(dir, `file${i}.${EXTENSIONS[i % EXTENSIONS.length]}`), lines.join("\n") + "\n");
  }
}

/** Median ms of `runs` timed runs after one warm-up run. */
async function timeIt(task: () => Promise<void>, runs = RUNS): Promise<number> {
  await task(); // warm the page cache and the rg probe
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await task();
    times.push(performance.now() - start);
  }
  return round(median(times));
}

/** Runs two tasks alternately (so background load hits both alike); median ms of each. */
async function timePair(ours: () => Promise<void>, baseline: () => Promise<void>): Promise<[number, number]> {
  await ours();
  await baseline();
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    let start = performance.now();
    await ours();
    a.push(performance.now() - start);
    start = performance.now();
    await baseline();
    b.push(performance.now() - start);
  }
  return [round(median(a)), round(median(b))];
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

async function callTool(tool: RegisteredTool, input: Record<string, unknown>, ctx: ToolContext): Promise<void> {
  const result = await tool.execute(input, { ...ctx, toolCallId: randomIds.next("call") });
  const output = typeof result === "string" ? result : result.output;
  if (output.startsWith("Error:") || output.startsWith("No ")) throw new Error(`bench query failed: ${output.slice(0, 200)}`);
}

function spawnDrain(binary: string, args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { cwd, stdio: ["ignore", "pipe", "ignore"] });
    child.stdout.on("data", () => undefined);
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`rg exited ${code}`))));
  });
}


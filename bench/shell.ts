import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "../src/base/clock.js";
import { detectIsolation } from "../src/tools/shared/shell/isolation.js";
import { ShellManager } from "../src/tools/shared/shell/shell-manager.js";
import { median, withBaseline, type BenchResult } from "./types.js";

const ROUNDS = 200;
const WARMUP = 10;

function spawnBash(cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["--noprofile", "--norc", "-c", "true"], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    child.once("error", reject);
    child.once("close", () => resolve());
  });
}

async function time(fn: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < WARMUP; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const started = performance.now();
    await fn();
    samples.push(performance.now() - started);
  }
  return samples;
}

/**
 * A trivial command's round trip in the session's persistent shell (driver line,
 * syntax pre-check, source, sentinel) against spawning a fresh `bash -c true`,
 * measured in the same run. Median of ROUNDS each.
 */
export async function run(): Promise<BenchResult[]> {
  const workspace = mkdtempSync(join(tmpdir(), "veil-bench-shell-"));
  const isolation = detectIsolation();
  const manager = new ShellManager({ workspace, isolation, clock: systemClock, loadBashrc: false });
  try {
    await manager.run("true", { timeoutMs: 30_000 });
    const persistent = median(await time(() => manager.run("true", { timeoutMs: 30_000 })));
    const echo = median(await time(() => manager.run("echo hello; cd . && pwd", { timeoutMs: 30_000 })));
    const fresh = median(await time(() => spawnBash(workspace)));
    const baseline = { name: "spawn bash -c true", value: fresh };
    const note = `median of ${ROUNDS}; isolation=${isolation.mode}; baseline = spawn with piped output, wait for close`;
    return [
      withBaseline({ name: "bash round trip (persistent shell, `true`)", value: persistent, unit: "ms", baseline, note }),
      withBaseline({ name: "bash round trip (persistent shell, echo + cd + pwd)", value: echo, unit: "ms", baseline, note }),
      { name: "spawn bash -c true", value: fresh, unit: "ms", note: `median of ${ROUNDS}` },
    ];
  } finally {
    await manager.dispose();
    rmSync(workspace, { recursive: true, force: true });
  }
}

import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ensureBuiltRunner } from "./built-runner.js";

const PARENT = fileURLToPath(new URL("./orphan-parent.mjs", import.meta.url));

/** Running (a zombie waiting for its new parent to reap it counts as gone). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

async function startParent(runner: string, warm: number) {
  const pool = runner.replace(/child-main\.js$/, "pool.js");
  const parent = spawn(process.execPath, [PARENT, pool, runner, String(warm)], { stdio: ["ignore", "pipe", "inherit"] });
  const pids = await new Promise<number[]>((resolve, reject) => {
    let out = "";
    parent.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("\n")) resolve(JSON.parse(out.split("\n")[0]!));
    });
    parent.once("exit", (code) => reject(new Error(`parent exited early (${code})`)));
  });
  const gone = new Promise<void>((resolve) => parent.once("exit", () => resolve()));
  return { pids, kill: async () => (parent.kill("SIGKILL"), await gone) };
}

describe("custom-tool processes whose server is killed -9", () => {
  // Kill points: while the children still boot, around their "ready", and once they idle warm.
  for (const delayMs of [0, 40, 150, 600]) {
    it(`exit when the parent dies ${delayMs} ms after forking them`, async () => {
      const runner = await ensureBuiltRunner();
      const parent = await startParent(runner, 3);
      expect(parent.pids).toHaveLength(3);
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      await parent.kill();
      await expect.poll(() => parent.pids.filter(alive), { timeout: 15_000, interval: 50 }).toEqual([]);
    });
  }
});

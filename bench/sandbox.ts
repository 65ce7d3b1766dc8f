import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "../src/base/clock.js";
import { defaultSandbox } from "../src/config/defaults.js";
import type { SandboxNetwork } from "../src/config/types.js";
import { detectSandbox } from "../src/tools/shared/sandbox/probe.js";
import { Sandbox } from "../src/tools/shared/sandbox/sandbox.js";
import { detectIsolation } from "../src/tools/shared/shell/isolation.js";
import { ShellManager } from "../src/tools/shared/shell/shell-manager.js";
import { median, withBaseline, type BenchResult } from "./types.js";

const STARTS = 30;
const CALLS = 200;
const WARMUP = 10;

/**
 * The sandbox's cost to a session's shell, inside against outside in the same run:
 * starting a shell (spawn → its first answer) and a steady call (`true` in a warm shell).
 * Outside is the isolation a session gets without a sandbox (a PID namespace where the
 * machine allows one). Aims: start ≤ 1.5×, steady call ≤ 1.1×.
 */
export async function run(): Promise<BenchResult[]> {
  const support = detectSandbox();
  if (!support.available) throw new Error(`no sandbox on this machine: ${support.reason}`);
  const workspace = mkdtempSync(join(tmpdir(), "veil-bench-sandbox-"));
  const isolation = detectIsolation();
  const folders: string[] = [];
  const outside = () => new ShellManager({ workspace, isolation, clock: systemClock, loadBashrc: false });
  const inside = (network: SandboxNetwork) => () =>
    new ShellManager({
      workspace,
      isolation,
      clock: systemClock,
      loadBashrc: false,
      sandbox: {
        create: (folder) => {
          folders.push(folder);
          return Sandbox.create({
            support,
            policy: { ...defaultSandbox(), network, allowHosts: ["127.0.0.1"] },
            workspace,
            writeRoots: [],
            projectDir: join(workspace, ".veil"),
            veilHome: join(workspace, ".veil-home"),
            privateRoot: folder,
            envBase: process.env,
            secretNames: [],
          });
        },
        onBlocked: () => undefined,
      },
    });
  try {
    // Alternating, one start (or call) each in turn: load on the machine hits every kind alike.
    const [startOutside, startInside, startAllowlist] = await shellStarts([outside, inside("full"), inside("allowlist")]);
    const [callOutside, callInside] = await steadyCalls([outside(), inside("full")()]);
    const startBase = { name: "shell start outside the sandbox", value: startOutside };
    const callBase = { name: "steady `true` outside the sandbox", value: callOutside };
    const note = `isolation outside = ${isolation.mode}; bwrap flags ${support.flags.join(" ")}`;
    return [
      withBaseline({ name: "shell start inside the sandbox (spawn → first answer)", value: startInside, unit: "ms", baseline: startBase, target: "≤ 1.5×", note: `median of ${STARTS}; ${note}` }),
      withBaseline({ name: "shell start inside, network allowlist (with its forwarder)", value: startAllowlist, unit: "ms", baseline: startBase, note: `median of ${STARTS}` }),
      withBaseline({ name: "steady bash call inside the sandbox (`true`)", value: callInside, unit: "ms", baseline: callBase, target: "≤ 1.1×", note: `median of ${CALLS}` }),
    ];
  } finally {
    rmSync(workspace, { recursive: true, force: true });
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  }
}

/** Per kind of shell manager, the median time from a new session's manager to its first command's answer. */
async function shellStarts(makers: (() => ShellManager)[]): Promise<number[]> {
  const samples: number[][] = makers.map(() => []);
  for (let i = 0; i < STARTS + 3; i++) {
    for (const [kind, make] of makers.entries()) {
      const manager = make();
      const started = performance.now();
      await manager.run("true", { timeoutMs: 30_000 });
      if (i >= 3) samples[kind]!.push(performance.now() - started);
      await manager.dispose();
    }
  }
  return samples.map(median);
}

/** Per warm shell, the median time of a `true`, the shells taking turns. */
async function steadyCalls(managers: ShellManager[]): Promise<number[]> {
  try {
    const samples: number[][] = managers.map(() => []);
    for (let i = 0; i < WARMUP + CALLS; i++) {
      for (const [kind, manager] of managers.entries()) {
        const started = performance.now();
        await manager.run("true", { timeoutMs: 30_000 });
        if (i >= WARMUP) samples[kind]!.push(performance.now() - started);
      }
    }
    return samples.map(median);
  } finally {
    await Promise.all(managers.map((manager) => manager.dispose()));
  }
}

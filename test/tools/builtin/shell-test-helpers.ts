import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { defaultSandbox } from "../../../src/config/defaults.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";
import { isAlive } from "../../../src/tools/shared/shell/isolation.js";
import type { ShellManager } from "../../../src/tools/shared/shell/shell-manager.js";
import { SHELLS_KEY } from "../../../src/tools/shared/shell/shell-manager.js";

export const BASHRC = [
  'echo "bashrc" >> "$HOME/bashrc-count"',
  "alias from_rc='echo alias-from-bashrc'",
  "export FROM_RC=yes",
  "",
].join("\n");

export type ShellHarness = ToolHarness & { home: string };

/**
 * A tool harness whose shells use a private HOME (with a small .bashrc that counts how
 * often it runs), so tests do not depend on, or wait for, the machine's ~/.bashrc. The
 * same rc seeds the sandbox's private home ($VEIL_HOME/sandbox-home/.bashrc), so the
 * shells read it whether they run in the sandbox (where bwrap works) or not. The
 * process-group isolation is the fallback outside any namespace, so it runs unsandboxed.
 */
export async function shellHarness(isolation: "auto" | "process-group" = "auto"): Promise<ShellHarness> {
  const home = mkdtempSync(join(tmpdir(), "veil-home-"));
  const settings = isolation === "process-group" ? { sandbox: { ...defaultSandbox(), mode: "off" as const } } : {};
  const harness = await createToolHarness({ settings, services: { shell: { isolation, env: { ...process.env, HOME: home } } } });
  Object.assign(harness, { home });
  writeRc(harness as ShellHarness, BASHRC);
  const close = harness.close.bind(harness);
  harness.close = async () => {
    await close();
    rmSync(home, { recursive: true, force: true });
  };
  return harness as ShellHarness;
}

/** Writes the harness's ~/.bashrc, in the host HOME and in the sandbox's seed. */
export function writeRc(harness: ShellHarness, text: string): void {
  writeFileSync(join(harness.home, ".bashrc"), text);
  const seed = join(harness.config.paths.homeDir, "sandbox-home");
  mkdirSync(seed, { recursive: true });
  writeFileSync(join(seed, ".bashrc"), text);
}

/** The HOME the harness's shells have: the sandbox's private one, else the harness's. */
export async function shellHome(harness: ShellHarness): Promise<string> {
  const manager = harness.sessionResources.peek<ShellManager>(SHELLS_KEY);
  return (await manager?.sandboxHome()) ?? harness.home;
}

export function managerOf(harness: ToolHarness): ShellManager {
  const manager = harness.sessionResources.peek<ShellManager>(SHELLS_KEY);
  if (!manager) throw new Error("no shell manager yet");
  return manager;
}

/** Host PIDs of live (non-zombie) processes whose argv is exactly `argv`. */
export function pidsRunning(...argv: string[]): number[] {
  const wanted = `${argv.join("\0")}\0`;
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8") === wanted && isAlive(Number(entry))) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

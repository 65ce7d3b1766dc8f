import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

/**
 * A tool harness whose shells use a private HOME (with a small .bashrc that counts how
 * often it runs), so tests do not depend on, or wait for, the machine's ~/.bashrc.
 */
export async function shellHarness(isolation: "auto" | "process-group" = "auto"): Promise<ToolHarness & { home: string }> {
  const home = mkdtempSync(join(tmpdir(), "veil-home-"));
  writeFileSync(join(home, ".bashrc"), BASHRC);
  const harness = await createToolHarness({ services: { shell: { isolation, env: { ...process.env, HOME: home } } } });
  const close = harness.close.bind(harness);
  harness.close = async () => {
    await close();
    rmSync(home, { recursive: true, force: true });
  };
  return Object.assign(harness, { home });
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

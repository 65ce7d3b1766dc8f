import type { ShellServiceOptions } from "../../services.js";
import type { ToolContext } from "../../types.js";
import { ToolError } from "../../../errors.js";
import type { BackgroundShell } from "./background-shell.js";
import { IsolationProbe, ISOLATION_KEY, PROCESS_GROUP } from "./isolation.js";
import { SHELLS_KEY, ShellManager } from "./shell-manager.js";

export type { ShellServiceOptions } from "../../services.js";

/** The session's ShellManager, created on first use; it is disposed when the session closes. */
export function sessionShells(ctx: Pick<ToolContext, "session" | "runtime" | "services" | "workspace" | "clock">): ShellManager {
  const options: ShellServiceOptions = ctx.services.shell ?? {};
  return ctx.session.get(SHELLS_KEY, () => {
    const isolation =
      options.isolation === "process-group" ? PROCESS_GROUP : ctx.runtime.get(ISOLATION_KEY, () => new IsolationProbe()).get();
    return new ShellManager({ workspace: ctx.workspace, isolation, clock: ctx.clock, loadBashrc: options.loadBashrc, env: options.env });
  });
}

/**
 * sessionShells() once the isolation is known, detected without blocking when no warm-up has
 * yet: the blocking probe (spawnSync, ~100 ms on a busy machine) stopped every session's loop.
 */
export async function openSessionShells(ctx: Parameters<typeof sessionShells>[0]): Promise<ShellManager> {
  const options: ShellServiceOptions = ctx.services.shell ?? {};
  if (options.isolation !== "process-group") await ctx.runtime.get(ISOLATION_KEY, () => new IsolationProbe()).warm();
  return sessionShells(ctx);
}

/**
 * bash's warm-up: detects the isolation without blocking, then has the session's shell
 * manager start the foreground shell in the workspace for the first bash call to adopt.
 */
export async function prewarmSessionShell(ctx: Parameters<typeof sessionShells>[0]): Promise<void> {
  const options: ShellServiceOptions = ctx.services.shell ?? {};
  try {
    if (options.isolation !== "process-group") await ctx.runtime.get(ISOLATION_KEY, () => new IsolationProbe()).warm();
    // The session may have closed meanwhile: its scope then refuses the manager, and nothing starts.
    await sessionShells(ctx).prewarm();
  } catch {
    // Best effort: the first bash call starts its shell itself, and reports what fails.
  }
}

/** The background shell with this id, or SHELL_NOT_FOUND naming the ids that exist. */
export function findBackground(ctx: Parameters<typeof sessionShells>[0], shellId: string): BackgroundShell {
  const manager = ctx.session.peek<ShellManager>(SHELLS_KEY);
  const shell = manager?.background(shellId);
  if (shell) return shell;
  const known = manager?.backgroundIds() ?? [];
  const hint = known.length > 0 ? ` Known shells: ${known.join(", ")}.` : " This session has started no background shell.";
  throw new ToolError("SHELL_NOT_FOUND", `No background shell "${shellId}" in this session.${hint}`);
}

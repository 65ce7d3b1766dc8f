import type { ShellServiceOptions } from "../../services.js";
import type { ToolContext } from "../../types.js";
import { ToolError } from "../../../errors.js";
import { chooseSandbox, chooseSandboxAsync, createSandbox, unsandboxedEnv, type SandboxChoice } from "../sandbox/session.js";
import type { BackgroundShell } from "./background-shell.js";
import { IsolationProbe, ISOLATION_KEY, PROCESS_GROUP } from "./isolation.js";
import { SHELLS_KEY, ShellManager } from "./shell-manager.js";

export type { ShellServiceOptions } from "../../services.js";

type ShellContext = Pick<ToolContext, "session" | "runtime" | "services" | "workspace" | "clock" | "settings" | "agent" | "paths" | "log" | "emit">;

/**
 * The session's ShellManager, created on first use; it is disposed when the session closes.
 * Its shells run in the agent's sandbox when there is one (see ../sandbox/session.ts); with
 * sandbox.mode "required" and none, this throws SANDBOX_UNAVAILABLE and nothing starts.
 */
export function sessionShells(ctx: ShellContext, choice: SandboxChoice = chooseSandbox(ctx, "command")): ShellManager {
  const options: ShellServiceOptions = ctx.services.shell ?? {};
  return ctx.session.get(SHELLS_KEY, () => {
    const env = unsandboxedEnv(options.env, ctx.agent.env);
    const base = { workspace: ctx.workspace, clock: ctx.clock, loadBashrc: options.loadBashrc, env };
    if (choice.sandboxed) {
      return new ShellManager({
        ...base,
        isolation: PROCESS_GROUP,
        sandbox: {
          create: (folder) => createSandbox(ctx, choice, folder, options.env ?? process.env),
          onBlocked: (toolCallId, host, port) => void ctx.emit({ type: "sandbox.blocked", toolCallId: toolCallId ?? null, host, port }).catch(() => undefined),
        },
      });
    }
    const isolation =
      options.isolation === "process-group" ? PROCESS_GROUP : ctx.runtime.get(ISOLATION_KEY, () => new IsolationProbe()).get();
    return new ShellManager({ ...base, isolation });
  });
}

/**
 * sessionShells() once the isolation is known, detected without blocking when no warm-up has
 * yet: the blocking probe (spawnSync, ~100 ms on a busy machine) stopped every session's loop.
 */
export async function openSessionShells(ctx: ShellContext): Promise<ShellManager> {
  const options: ShellServiceOptions = ctx.services.shell ?? {};
  const choice = await chooseSandboxAsync(ctx, "command");
  if (!choice.sandboxed && options.isolation !== "process-group") await ctx.runtime.get(ISOLATION_KEY, () => new IsolationProbe()).warm();
  return sessionShells(ctx, choice);
}

/**
 * bash's warm-up: detects the isolation without blocking, then has the session's shell
 * manager start the foreground shell in the workspace for the first bash call to adopt.
 */
export async function prewarmSessionShell(ctx: ShellContext): Promise<void> {
  try {
    // The session may have closed meanwhile: its scope then refuses the manager, and nothing starts.
    await (await openSessionShells(ctx)).prewarm();
  } catch {
    // Best effort: the first bash call starts its shell itself, and reports what fails.
  }
}

/** The background shell with this id, or SHELL_NOT_FOUND naming the ids that exist. */
export function findBackground(ctx: Pick<ToolContext, "session">, shellId: string): BackgroundShell {
  const manager = ctx.session.peek<ShellManager>(SHELLS_KEY);
  const shell = manager?.background(shellId);
  if (shell) return shell;
  const known = manager?.backgroundIds() ?? [];
  const hint = known.length > 0 ? ` Known shells: ${known.join(", ")}.` : " This session has started no background shell.";
  throw new ToolError("SHELL_NOT_FOUND", `No background shell "${shellId}" in this session.${hint}`);
}

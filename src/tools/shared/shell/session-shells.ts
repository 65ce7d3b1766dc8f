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

/** The background shell with this id, or SHELL_NOT_FOUND naming the ids that exist. */
export function findBackground(ctx: Parameters<typeof sessionShells>[0], shellId: string): BackgroundShell {
  const manager = ctx.session.peek<ShellManager>(SHELLS_KEY);
  const shell = manager?.background(shellId);
  if (shell) return shell;
  const known = manager?.backgroundIds() ?? [];
  const hint = known.length > 0 ? ` Known shells: ${known.join(", ")}.` : " This session has started no background shell.";
  throw new ToolError("SHELL_NOT_FOUND", `No background shell "${shellId}" in this session.${hint}`);
}

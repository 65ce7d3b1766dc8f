import { formatAge } from "../base/duration.js";
import { closeSessions, idleSessions, MAX_CLOSE_IDS, type CloseOutcome } from "../core/session-cleanup.js";
import { sessionView } from "../core/session-view.js";
import type { Runtime } from "../runtime.js";
import type { SessionRow } from "../store/store.js";
import type { SessionsCloseCommand, SessionsCommand, SessionsPruneCommand } from "./args.js";
import { UsageError, commandUsage } from "./args.js";
import type { CliIo } from "./terminal.js";
import { withRuntime } from "./listings.js";

/**
 * `veil sessions`: the open sessions (`--all`: closed ones too), most recently active first,
 * a sub-agent under its parent; `--search TEXT` as GET /sessions?q=; `--json` prints what
 * GET /sessions answers.
 */
export async function sessionsCommand(command: SessionsCommand, io: CliIo): Promise<number> {
  return withRuntime(command, io, async (runtime) => {
    const rows = (await runtime.store.listSessions({ order: "activity", query: command.search })).filter((row) => command.all || row.status !== "closed");
    if (command.json) {
      io.stdout(JSON.stringify(rows.map(sessionView(runtime.config, runtime.agents)), null, 2) + "\n");
      return 0;
    }
    if (rows.length === 0) {
      const what = command.search ? `no session matches "${command.search}"` : command.all ? "no sessions" : "no open sessions";
      io.stdout(`${what} in ${runtime.config.paths.workspace}\n`);
      return 0;
    }
    for (const line of sessionLines(rows, runtime.clock.now())) io.stdout(`${line}\n`);
    return 0;
  });
}

/** One line per session: id, status, last activity, agent, who started it, title; sub-agents indented under their parent. */
export function sessionLines(rows: readonly SessionRow[], now: number): string[] {
  const ids = new Set(rows.map((row) => row.id));
  const children = new Map<string, SessionRow[]>();
  for (const row of rows) if (row.parent_session_id && ids.has(row.parent_session_id)) children.set(row.parent_session_id, [...(children.get(row.parent_session_id) ?? []), row]);
  const lines: string[] = [];
  const add = (row: SessionRow, depth: number) => {
    const age = `${formatAge(now - Date.parse(row.updated_at))} ago`;
    const origin = row.origin === "api" ? "" : `[${row.origin}] `;
    const name = row.instance_name ? `${row.instance_name} · ` : "";
    lines.push(`${"  ".repeat(depth)}${row.id}  ${row.status.padEnd(9)} ${age.padStart(7)}  ${row.agent.padEnd(12)} ${origin}${name}${row.title ?? "(untitled)"}`);
    for (const child of children.get(row.id) ?? []) add(child, depth + 1);
  };
  for (const row of rows) if (!row.parent_session_id || !ids.has(row.parent_session_id)) add(row, 0);
  return lines;
}

/** `veil sessions close ID…`: exit 0 when every one is closed; 1 when one is unknown or runs in another process. */
export async function sessionsCloseCommand(command: SessionsCloseCommand, io: CliIo): Promise<number> {
  if (command.ids.length > MAX_CLOSE_IDS) throw new UsageError(`veil sessions close: at most ${MAX_CLOSE_IDS} sessions at once`, commandUsage("sessions close"));
  return withRuntime(command, io, async (runtime) => report(runtime, io, command.json, await closeSessions(runtime.sessions, command.ids, { runningElsewhere: true })));
}

/** `veil sessions prune --idle 7d [--dry-run]`: closes every open top-level session idle that long. */
export async function sessionsPruneCommand(command: SessionsPruneCommand, io: CliIo): Promise<number> {
  return withRuntime(command, io, async (runtime) => {
    const now = runtime.clock.now();
    const idle = await idleSessions(runtime.store, now, command.idleMs);
    if (command.dryRun) {
      if (command.json) io.stdout(JSON.stringify({ wouldClose: idle.map(sessionView(runtime.config, runtime.agents)) }, null, 2) + "\n");
      else for (const row of idle) io.stdout(`would close ${row.id}  idle ${formatAge(now - Date.parse(row.updated_at))}  ${row.title ?? "(untitled)"}\n`);
      if (!command.json && idle.length === 0) io.stdout(`no open session idle for ${command.idle} or more\n`);
      return 0;
    }
    const code = await report(runtime, io, command.json, await closeSessions(runtime.sessions, idle.map((row) => row.id), { runningElsewhere: true }));
    if (!command.json) io.stdout(idle.length === 0 ? `no open session idle for ${command.idle} or more\n` : `closed ${idle.length} session${idle.length === 1 ? "" : "s"} idle for ${command.idle} or more\n`);
    return code;
  });
}

function report(runtime: Runtime, io: CliIo, json: boolean, outcome: CloseOutcome): number {
  if (json) {
    const view = sessionView(runtime.config, runtime.agents);
    io.stdout(JSON.stringify({ closed: outcome.closed.map(view), notFound: outcome.notFound, busy: outcome.busy.map(view) }, null, 2) + "\n");
  } else {
    for (const row of outcome.closed) io.stdout(`closed ${row.id}  ${row.title ?? "(untitled)"}\n`);
    for (const id of outcome.notFound) io.stderr(`SESSION_NOT_FOUND: no session "${id}"\n`);
    for (const row of outcome.busy) io.stderr(`SESSION_BUSY: session "${row.id}" is running in another process (a veil serve?); close it there (DELETE /sessions/${row.id}) or once its turn ends\n`);
  }
  return outcome.notFound.length + outcome.busy.length === 0 ? 0 : 1;
}

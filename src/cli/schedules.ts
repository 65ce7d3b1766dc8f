import type { Schedule, ScheduleRun } from "../base/schedules.js";
import type { SchedulesCommand } from "./args.js";
import { withRuntime } from "./listings.js";
import type { CliIo } from "./terminal.js";

/**
 * `veil schedules`: the workspace's schedules, read and written in its store. A server on
 * the same store picks changes up within seconds (it reads the rows again every 5 s).
 */
export async function schedulesCommand(command: SchedulesCommand, io: CliIo): Promise<number> {
  return withRuntime(command, io, async (runtime) => {
    const schedules = runtime.schedules;
    const print = (value: unknown, text: string) => io.stdout(command.json ? `${JSON.stringify(value, null, 2)}\n` : text);
    switch (command.action) {
      case "list": {
        const all = await schedules.list();
        print(all, all.length === 0 ? `no schedules in ${runtime.config.paths.workspace}\n` : all.map(scheduleLine).join(""));
        return 0;
      }
      case "create": {
        const created = await schedules.create({
          agent: command.agent!,
          prompt: command.prompt!,
          ...(command.cron !== undefined ? { cron: command.cron } : { everySeconds: command.everySeconds }),
          ...(command.session ? { session: command.session } : {}),
          enabled: command.enabled,
        });
        print(created, scheduleLine(created));
        return 0;
      }
      case "runs": {
        const runs = await schedules.runs(command.id!);
        print(runs, runs.length === 0 ? `no runs of ${command.id} yet\n` : runs.map(runLine).join(""));
        return 0;
      }
      case "enable":
      case "disable": {
        const updated = await schedules.setEnabled(command.id!, command.action === "enable");
        print(updated, scheduleLine(updated));
        return 0;
      }
      case "delete":
        await schedules.delete(command.id!);
        print({ ok: true, id: command.id }, `deleted ${command.id}\n`);
        return 0;
    }
  });
}

function scheduleLine(s: Schedule): string {
  const when = s.cron !== null ? `cron "${s.cron}"` : `every ${s.everySeconds}s`;
  const next = s.enabled ? `next ${s.nextRunAt}` : "disabled";
  const target = s.session === "new" ? "" : `  session=${s.session}`;
  return `${s.id}  ${s.agent.padEnd(14)} ${when.padEnd(22)} ${next}${target}  ${JSON.stringify(firstLine(s.prompt))}\n`;
}

function runLine(r: ScheduleRun): string {
  return `${r.at}  ${r.status.padEnd(7)} ${r.sessionId ?? "-"}${r.error ? `  ${r.error}` : ""}\n`;
}

function firstLine(text: string): string {
  const line = text.split("\n")[0] ?? "";
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}

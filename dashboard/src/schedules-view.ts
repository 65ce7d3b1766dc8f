/**
 * The schedules of the service (GET /schedules) and each one's latest runs, in a layer the
 * top bar opens: enable or disable one, and open the session a run went to. Runs are no
 * events, so the list is read again every few seconds while it is open.
 */
import type { Schedule, ScheduleRun } from "../../src/client/types.js";
import type { Api } from "./api.js";
import { h, replaceChildren } from "./dom.js";
import { relativeTime, shortId } from "./format.js";

const REFRESH_MS = 2000;
const RUNS_SHOWN = 10;

export class SchedulesView {
  readonly el: HTMLElement;
  readonly button: HTMLButtonElement;
  private readonly list = h("ul", { testid: "schedule-list", class: "schedule-list", "aria-label": "Schedules" });
  private readonly message = h("p", { class: "form-message error", role: "alert" });
  private timer: number | undefined;
  private loading: Promise<void> | null = null;

  constructor(
    private readonly api: Api,
    private readonly openSession: (sessionId: string) => void,
  ) {
    this.button = h("button", { type: "button", testid: "schedules-open", title: "Schedules: prompts that run on their own", onclick: () => (this.el.hidden ? this.open() : this.close()) }, "Recurring");
    const close = h("button", { type: "button", "aria-label": "Close the schedules", onclick: () => this.close() }, "Close");
    const card = h(
      "section",
      { class: "schedules-card", role: "dialog", "aria-modal": "true", "aria-labelledby": "schedules-title" },
      h("div", { class: "row" }, h("h2", { id: "schedules-title" }, "Schedules"), h("span", { class: "spacer" }), close),
      this.message,
      this.list,
    );
    this.el = h("div", { class: "schedules-layer", hidden: true, onclick: (event: MouseEvent) => event.target === this.el && this.close() }, card);
    this.el.addEventListener("keydown", (event) => {
      if (event.key === "Escape") this.close();
    });
  }

  open(): void {
    this.el.hidden = false;
    void this.refresh();
    window.clearInterval(this.timer);
    this.timer = window.setInterval(() => void this.refresh(), REFRESH_MS);
    this.el.querySelector<HTMLElement>("button")?.focus();
  }

  close(): void {
    this.el.hidden = true;
    window.clearInterval(this.timer);
    this.timer = undefined;
    this.button.focus();
  }

  /** One read at a time: a slow server gets no pile of requests. */
  refresh(): Promise<void> {
    this.loading ??= this.load().finally(() => (this.loading = null));
    return this.loading;
  }

  private async load(): Promise<void> {
    try {
      const { schedules } = await this.api.get<{ schedules: Schedule[] }>("/schedules");
      const runs = await Promise.all(schedules.map((s) => this.api.get<{ runs: ScheduleRun[] }>(`/schedules/${encodeURIComponent(s.id)}/runs?limit=${RUNS_SHOWN}`).then((r) => r.runs)));
      this.message.textContent = "";
      if (schedules.length === 0) replaceChildren(this.list, h("li", { class: "empty" }, "No schedules. Create one with POST /schedules or veil schedules create."));
      else replaceChildren(this.list, schedules.map((schedule, i) => this.item(schedule, runs[i]!)));
    } catch (error) {
      this.message.textContent = `Could not read the schedules: ${(error as Error).message}`;
    }
  }

  private item(schedule: Schedule, runs: ScheduleRun[]): HTMLElement {
    const when = schedule.cron !== null ? `cron ${schedule.cron} (UTC)` : `every ${schedule.everySeconds} s`;
    const next = schedule.enabled && schedule.nextRunAt ? `next ${upcoming(schedule.nextRunAt)}` : "disabled";
    const toggle = h("button", { type: "button", testid: "schedule-toggle", onclick: () => void this.setEnabled(schedule, !schedule.enabled, toggle) }, schedule.enabled ? "Disable" : "Enable");
    return h(
      "li",
      { testid: "schedule-item", class: "schedule-item", "data-schedule-id": schedule.id, "data-enabled": String(schedule.enabled) },
      h("div", { class: "row" }, h("strong", null, schedule.agent), h("span", { class: "badge" }, when), h("span", { class: "row-meta" }, next), h("span", { class: "spacer" }), toggle),
      h("p", { class: "schedule-prompt" }, schedule.prompt),
      schedule.running ? h("p", { class: "row-meta" }, `running since ${relativeTime(Date.parse(schedule.running.at))}`) : null,
      h(
        "ul",
        { testid: "schedule-runs", class: "schedule-runs", "aria-label": `Runs of ${schedule.id}` },
        runs.length === 0 ? h("li", { class: "empty" }, "No runs yet.") : runs.map((run) => this.run(run)),
      ),
    );
  }

  private run(run: ScheduleRun): HTMLElement {
    const time = utc(run.at);
    const session = run.sessionId;
    return h(
      "li",
      { testid: "schedule-run", class: `schedule-run ${run.status}`, "data-status": run.status, "data-session-id": session ?? "" },
      h("span", { class: "mono" }, time),
      h("span", { class: `badge status ${run.status}` }, run.status),
      session ? h("button", { type: "button", class: "link", onclick: () => (this.close(), this.openSession(session)) }, shortId(session)) : null,
      run.error ? h("span", { class: "row-meta", title: run.error }, run.error) : null,
    );
  }

  private async setEnabled(schedule: Schedule, enabled: boolean, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    try {
      await this.api.patch(`/schedules/${encodeURIComponent(schedule.id)}`, { enabled });
      // A read already under way may have started before the change.
      await this.loading;
      await this.refresh();
    } catch (error) {
      this.message.textContent = `Could not ${enabled ? "enable" : "disable"} the schedule: ${(error as Error).message}`;
      button.disabled = false;
    }
  }
}

/** "2026-12-07 09:00:00 UTC" */
function utc(iso: string): string {
  return new Date(iso).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

/** Soon: "in 12 s"; further off, the time itself. */
function upcoming(iso: string): string {
  const at = Date.parse(iso);
  return Math.abs(at - Date.now()) < 3_600_000 ? relativeTime(at) : utc(iso);
}

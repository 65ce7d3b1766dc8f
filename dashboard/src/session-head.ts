/** The selected session's header: who it is, what it costs, how full its context is, and its controls. */
import type { Api } from "./api.js";
import { h, replaceChildren } from "./dom.js";
import { compactNumber, money } from "./format.js";
import { DEFAULT_CONTEXT_WINDOW, type SessionRow } from "./sessions-view.js";

export class SessionHead {
  readonly el = h("div", { class: "session-head" });
  private readonly message = h("span", { class: "form-message", role: "status" });
  private armedFor: string | null = null;
  private disarm: number | undefined;
  private row: SessionRow | null = null;
  /** Spend summed from the open chat's chat.done events, for servers whose rows carry no cost_usd. */
  private chatCost: { sessionId: string; usd: number } | null = null;

  constructor(
    private readonly api: Api,
    private readonly onUpdate: (row: SessionRow) => void,
  ) {
    this.render(null);
  }

  setChatCost(sessionId: string, usd: number): void {
    this.chatCost = { sessionId, usd };
    if (this.row?.id === sessionId) this.render(this.row);
  }

  render(row: SessionRow | null): void {
    this.row = row;
    // A refresh must not steal keyboard focus from a control.
    const focused = this.el.contains(document.activeElement) ? (document.activeElement as HTMLElement).dataset.action : undefined;
    if (focused) queueMicrotask(() => this.el.querySelector<HTMLElement>(`[data-action="${focused}"]`)?.focus());
    if (!row) return replaceChildren(this.el, h("h1", { class: "session-title" }, "No session selected"));
    const usage = row.token_usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    const window_ = row.context_window ?? DEFAULT_CONTEXT_WINDOW;
    const percent = Math.min(100, (row.context_size / window_) * 100);
    const fill = h("span", { class: `ctx-fill${percent > 80 ? " high" : ""}` });
    fill.style.width = `${percent.toFixed(1)}%`;
    const control = (label: string, path: string, enabled: boolean, testid?: string) =>
      h("button", { type: "button", testid, "data-action": path, disabled: !enabled, onclick: () => this.act(row, path) }, label);
    // Closing kills the session's shells and sub-agents: ask once more, without a blocking confirm().
    // The armed state outlives re-renders (the row refreshes on every status event).
    const armed = this.armedFor === row.id;
    const close = h("button", { type: "button", class: "danger", "data-action": "close", disabled: row.status === "closed" }, armed ? "Really close?" : "Close");
    close.addEventListener("click", () => {
      if (this.armedFor === row.id) return void this.act(row, "close");
      this.armedFor = row.id;
      window.clearTimeout(this.disarm);
      this.disarm = window.setTimeout(() => {
        this.armedFor = null;
        this.render(this.row);
      }, 4000);
      this.render(row);
    });
    replaceChildren(
      this.el,
      h(
        "div",
        { class: "head-main" },
        h("h1", { class: "session-title" }, row.instance_name || row.agent, h("span", { class: "row-id" }, ` ${row.id}`)),
        h(
          "div",
          { class: "head-meta" },
          h("span", { class: `badge status ${row.status}` }, row.status),
          h("span", null, `agent ${row.agent}`),
          h("span", null, `model ${row.model ?? "default"}`),
          h("span", { title: `prompt ${usage.prompt_tokens.toLocaleString()} · output ${usage.completion_tokens.toLocaleString()}` }, `${compactNumber(usage.total_tokens)} tokens`),
          h("span", { class: "cost" }, `cost ${money(row.cost_usd ?? (this.chatCost?.sessionId === row.id ? this.chatCost.usd : undefined))}`),
          h("span", { class: "ctx", title: `context ${row.context_size.toLocaleString()} of ${window_.toLocaleString()} tokens` }, "context ", h("span", { class: "ctx-bar wide" }, fill), ` ${compactNumber(row.context_size)} / ${compactNumber(window_)}`),
        ),
      ),
      h(
        "div",
        { class: "head-controls" },
        control("Cancel", "cancel", row.status === "running", "session-cancel"),
        control("Suspend", "suspend", row.status === "running" || row.status === "idle"),
        control("Resume", "resume", row.status === "suspended"),
        close,
        this.message,
      ),
    );
  }

  private async act(row: SessionRow, action: string): Promise<void> {
    this.message.textContent = "";
    try {
      const id = encodeURIComponent(row.id);
      const result = action === "close" ? await this.api.del<SessionRow>(`/sessions/${id}`) : (await this.api.post<{ session: SessionRow }>(`/sessions/${id}/${action}`)).session;
      this.onUpdate(result);
    } catch (error) {
      this.message.textContent = (error as Error).message;
      this.message.className = "form-message error";
    }
  }
}

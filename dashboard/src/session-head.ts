/** The selected session's header: who it is, what it costs, how full its context is, and its controls. */
import type { Api } from "./api.js";
import { h, replaceChildren } from "./dom.js";
import { compactNumber, money } from "./format.js";
import { DEFAULT_CONTEXT_WINDOW, sessionName, type SessionRow } from "./sessions-view.js";

export class SessionHead {
  readonly el = h("div", { class: "session-head" });
  private readonly message = h("span", { class: "form-message", role: "status" });
  private armedFor: string | null = null;
  private disarm: number | undefined;
  private row: SessionRow | null = null;
  /** Spend summed from the open chat's chat.done events, for servers whose rows carry no cost_usd. */
  private chatCost: { sessionId: string; usd: number } | null = null;
  /** The title being edited (kept across re-renders, which every status event causes). */
  private editing: { sessionId: string; draft: string } | null = null;

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

  /** A line beside the controls (a failed action, a session the address names that does not exist). */
  say(text: string): void {
    this.message.textContent = text;
    this.message.className = "form-message error";
    if (!this.row) this.el.append(this.message);
  }

  render(row: SessionRow | null): void {
    this.row = row;
    if (this.editing && this.editing.sessionId !== row?.id) this.editing = null;
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
        this.titleLine(row),
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

  /** The title, with a Rename control; while renaming, a field (Enter saves, Escape cancels). */
  private titleLine(row: SessionRow): HTMLElement {
    if (this.editing?.sessionId !== row.id) {
      const rename = h("button", { type: "button", testid: "session-rename", class: "link", "data-action": "rename", onclick: () => this.startRename(row) }, "Rename");
      return h("div", { class: "title-line" }, h("h1", { class: "session-title", testid: "session-title", title: row.title ?? "" }, sessionName(row)), h("span", { class: "row-id" }, row.id), rename);
    }
    const editing = this.editing;
    const input = h("input", { testid: "session-title-input", class: "title-input", value: editing.draft, maxlength: 200, "aria-label": "Session title", placeholder: "A title for this session" });
    input.addEventListener("input", () => (editing.draft = input.value));
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        void this.saveTitle(row, input.value);
      } else if (event.key === "Escape") {
        this.editing = null;
        this.render(this.row);
      }
    });
    queueMicrotask(() => input.isConnected && document.activeElement !== input && input.focus());
    return h("div", { class: "title-line" }, input);
  }

  private startRename(row: SessionRow): void {
    this.editing = { sessionId: row.id, draft: row.title ?? "" };
    this.render(row);
  }

  private async saveTitle(row: SessionRow, text: string): Promise<void> {
    try {
      const updated = await this.api.patch<SessionRow>(`/sessions/${encodeURIComponent(row.id)}`, { title: text.trim() ? text : null });
      this.editing = null;
      this.onUpdate(updated);
    } catch (error) {
      this.say((error as Error).message);
    }
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

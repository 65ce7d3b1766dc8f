/**
 * The session list as a tree: a sub-agent's `session-item` sits inside its parent's.
 * Rows come from GET /sessions; the server-wide stream keeps statuses live, and any
 * other change (tokens, a new sub-agent) refetches the list, at most a few times a second.
 */
import type { Api } from "./api.js";
import { h, replaceChildren } from "./dom.js";
import { compactNumber, money, shortId } from "./format.js";
import type { ServerEvent } from "./stream.js";

export interface SessionRow {
  id: string;
  /** The session this one was forked from (its history is rows copied from there). */
  forked_from?: string | null;
  /** Null until the first message names it (or someone renames it). */
  title?: string | null;
  agent: string;
  mode: string;
  status: "idle" | "running" | "suspended" | "closed";
  parent_session_id: string | null;
  spawn_depth: number;
  instance_name?: string | null;
  model?: string | null;
  context_size: number;
  context_window?: number;
  token_usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; cached_tokens?: number };
  cost_usd?: number;
  origin?: string;
  created_at: string;
  updated_at?: string;
}

/** What a session is called in the list and the header: a sub-agent by the name its parent gave it, else its title, else its agent. */
export function sessionName(row: SessionRow): string {
  return row.instance_name || row.title || row.agent;
}

/** What the name leaves out, for the line under it: a sub-agent's title, a titled session's agent. */
function besideName(row: SessionRow): string {
  if (row.instance_name) return row.title ? `${row.title} · ` : "";
  return row.title ? `${row.agent} · ` : "";
}

export type StatusFilter = "active" | "all" | SessionRow["status"];

/** Used when the row does not say (a model with no models.json entry has this window). */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

export class SessionsView {
  readonly el: HTMLElement;
  private readonly list: HTMLUListElement;
  private rows = new Map<string, SessionRow>();
  private filter: StatusFilter = "active";
  /** The search box's text: GET /sessions?q= (titles, ids, agents, instance names). */
  private query = "";
  private selected: string | null = null;
  private refetchTimer: number | undefined;
  private fetching = false;
  private fetchAgain = false;

  constructor(
    private readonly api: Api,
    private readonly onSelect: (row: SessionRow) => void,
    private readonly onChange: (row: SessionRow) => void,
  ) {
    this.list = h("ul", { testid: "session-list", class: "session-list", role: "tree", "aria-label": "Sessions" });
    this.list.addEventListener("keydown", (event) => this.onKey(event));
    this.el = this.list;
  }

  get(id: string): SessionRow | undefined {
    return this.rows.get(id);
  }

  setFilter(filter: StatusFilter): void {
    this.filter = filter;
    this.render();
  }

  setQuery(query: string): void {
    if (query.trim() === this.query) return;
    this.query = query.trim();
    void this.refresh().catch(() => undefined);
  }

  select(id: string | null): void {
    this.selected = id;
    for (const el of this.list.querySelectorAll<HTMLElement>(".session-item")) {
      const current = el.dataset.sessionId === id;
      el.classList.toggle("selected", current);
      el.querySelector(":scope > .session-row")?.setAttribute("aria-current", String(current));
    }
  }

  async refresh(): Promise<void> {
    if (this.fetching) {
      this.fetchAgain = true;
      return;
    }
    this.fetching = true;
    try {
      const rows = await this.api.get<SessionRow[]>(this.query ? `/sessions?q=${encodeURIComponent(this.query)}` : "/sessions");
      this.rows = new Map(rows.map((row) => [row.id, row]));
      this.render();
      const selected = this.selected && this.rows.get(this.selected);
      if (selected) this.onChange(selected);
    } finally {
      this.fetching = false;
      if (this.fetchAgain) {
        this.fetchAgain = false;
        void this.refresh();
      }
    }
  }

  /** Upserts a row the page just got (create, control actions). */
  put(row: SessionRow): void {
    this.rows.set(row.id, row);
    this.render();
    if (row.id === this.selected) this.onChange(row);
  }

  onEvent(event: ServerEvent): void {
    const id = event.sessionId;
    if (!id) return;
    const row = this.rows.get(id);
    if (event.type === "session.state" && row && typeof event.status === "string") {
      row.status = event.status as SessionRow["status"];
      const el = this.itemOf(id);
      if (el) el.dataset.status = row.status;
      if (el && this.visible(row)) this.renderRow(el.querySelector(".session-row")!, row);
      else this.render();
      if (id === this.selected) this.onChange(row);
    }
    if (event.type === "session.titled" && row) {
      row.title = typeof event.title === "string" ? event.title : null;
      this.render();
      if (id === this.selected) this.onChange(row);
    }
    if (!row || event.type === "chat.done" || event.type === "session.state" || event.type === "session.compacted") this.refetchSoon();
  }

  private refetchSoon(): void {
    if (this.refetchTimer !== undefined) return;
    this.refetchTimer = window.setTimeout(() => {
      this.refetchTimer = undefined;
      void this.refresh().catch(() => undefined);
    }, 250);
  }

  private visible(row: SessionRow): boolean {
    if (this.filter === "all") return true;
    if (this.filter === "active") return row.status !== "closed";
    return row.status === this.filter;
  }

  private itemOf(id: string): HTMLElement | null {
    return this.list.querySelector<HTMLElement>(`.session-item[data-session-id="${CSS.escape(id)}"]`);
  }

  private render(): void {
    const focusedId = (document.activeElement as HTMLElement | null)?.closest<HTMLElement>(".session-item")?.dataset.sessionId;
    const shown = [...this.rows.values()].filter((row) => this.visible(row));
    const ids = new Set(shown.map((row) => row.id));
    const children = new Map<string, SessionRow[]>();
    const roots: SessionRow[] = [];
    for (const row of shown) {
      const parent = row.parent_session_id;
      if (parent && ids.has(parent)) children.set(parent, [...(children.get(parent) ?? []), row]);
      else roots.push(row);
    }
    // Most recently active first, as the server lists them.
    roots.sort((a, b) => (b.updated_at ?? b.created_at).localeCompare(a.updated_at ?? a.created_at));
    const build = (row: SessionRow): HTMLElement => {
      const kids = (children.get(row.id) ?? []).sort((a, b) => a.created_at.localeCompare(b.created_at));
      const button = h("button", { type: "button", class: "session-row", onclick: () => this.onSelect(row) });
      this.renderRow(button, row);
      return h(
        "li",
        { testid: "session-item", class: `session-item${row.id === this.selected ? " selected" : ""}`, "data-session-id": row.id, "data-status": row.status, role: "treeitem", "aria-expanded": kids.length ? "true" : null },
        button,
        kids.length ? h("ul", { class: "session-children", role: "group" }, kids.map(build)) : null,
      );
    };
    const none = this.query ? `No session matches “${this.query}”.` : this.rows.size ? "No session matches the filter." : "No sessions yet.";
    replaceChildren(this.list, roots.length ? roots.map(build) : h("li", { class: "empty" }, none));
    this.select(this.selected);
    if (focusedId) this.itemOf(focusedId)?.querySelector<HTMLElement>(".session-row")?.focus();
  }

  private renderRow(button: HTMLElement, row: SessionRow): void {
    const window_ = row.context_window ?? DEFAULT_CONTEXT_WINDOW;
    const fill = h("span", { class: "ctx-fill" });
    fill.style.width = `${Math.min(100, (row.context_size / window_) * 100).toFixed(1)}%`;
    replaceChildren(
      button,
      h("span", { class: "row-top" }, h("span", { class: `status-dot ${row.status}`, "aria-hidden": "true" }), h("span", { class: "row-name", title: sessionName(row) }, sessionName(row)), h("span", { class: "row-id" }, shortId(row.id)), h("span", { class: `badge status ${row.status}` }, row.status)),
      h("span", { class: "row-meta" }, besideName(row), row.model ?? "default model", " · ", `${compactNumber(row.token_usage?.total_tokens ?? 0)} tok`, row.cost_usd !== undefined ? ` · ${money(row.cost_usd)}` : ""),
      h("span", { class: "ctx-bar", title: `context ${row.context_size.toLocaleString()} of ${window_.toLocaleString()} tokens` }, fill),
    );
  }

  /** Arrow keys move between rows; Home/End jump. */
  private onKey(event: KeyboardEvent): void {
    if (!["ArrowDown", "ArrowUp", "Home", "End"].includes(event.key)) return;
    const rows = [...this.list.querySelectorAll<HTMLElement>(".session-row")];
    const index = rows.indexOf(document.activeElement as HTMLElement);
    const next = event.key === "Home" ? 0 : event.key === "End" ? rows.length - 1 : index + (event.key === "ArrowDown" ? 1 : -1);
    const target = rows[Math.max(0, Math.min(rows.length - 1, next))];
    if (target) {
      event.preventDefault();
      target.focus();
    }
  }
}

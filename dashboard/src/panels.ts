/** The side panel of the selected session: its todo list, its wake-up schedule, memory files and its agent's skills. */
import type { Api } from "./api.js";
import { ApiError } from "./api.js";
import { h, replaceChildren } from "./dom.js";
import { relativeTime } from "./format.js";
import { SkillsView } from "./skills-view.js";
import type { SessionRow } from "./sessions-view.js";
import type { ServerEvent } from "./stream.js";

interface Todo {
  id: string;
  content: string;
  status: "pending" | "in_progress" | "completed";
  priority: "high" | "medium" | "low";
}

interface Wakeup {
  time: string;
  message: string;
  loop: boolean;
  nextFireAt?: number;
  intervalMs?: number;
}

const TODO_MARK = { pending: "○", in_progress: "◐", completed: "●" } as const;

export class Panels {
  readonly el: HTMLElement;
  private readonly todos = h("ul", { testid: "todo-list", class: "todo-list", "aria-label": "Todo list" });
  private readonly wakeup = h("div", { class: "wakeup" });
  private readonly memory = h("div", { class: "memory" });
  private readonly skills: SkillsView;
  private session: SessionRow | null = null;
  private wakeupState: Wakeup | null = null;
  private countdown: number | undefined;
  private shown = "todos";

  constructor(private readonly api: Api) {
    this.skills = new SkillsView(api);
    const tabs: [string, string, HTMLElement][] = [
      ["todos", "Todos", this.todos],
      ["wakeup", "Wake-up", this.wakeup],
      ["memory", "Memory", this.memory],
      ["skills", "Skills", this.skills.el],
    ];
    const buttons = tabs.map(([key, label]) => h("button", { type: "button", role: "tab", class: "tab", id: `tab-${key}`, "aria-controls": `panel-${key}`, onclick: () => show(key) }, label));
    const panes = tabs.map(([key, , content]) => h("div", { role: "tabpanel", class: "pane", id: `panel-${key}`, "aria-labelledby": `tab-${key}` }, content));
    const show = (key: string) => {
      tabs.forEach(([k], i) => {
        buttons[i]!.setAttribute("aria-selected", String(k === key));
        buttons[i]!.tabIndex = k === key ? 0 : -1;
        panes[i]!.hidden = k !== key;
      });
      this.shown = key;
      if (key === "skills") void this.skills.load();
    };
    const tablist = h("div", { role: "tablist", class: "tabs", "aria-label": "Session details" }, buttons);
    tablist.addEventListener("keydown", (event) => {
      if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
      const index = buttons.indexOf(document.activeElement as HTMLButtonElement);
      const next = buttons[(index + (event.key === "ArrowRight" ? 1 : buttons.length - 1)) % buttons.length]!;
      next.focus();
      next.click();
    });
    show("todos");
    this.el = h("aside", { class: "panels", "aria-label": "Session details" }, tablist, panes);
    this.renderTodos([]);
    this.renderWakeup();
    this.renderMemory();
  }

  async open(session: SessionRow | null): Promise<void> {
    const changed = session?.id !== this.session?.id;
    this.session = session;
    if (!changed) return;
    this.renderTodos([]);
    this.wakeupState = null;
    this.renderWakeup();
    this.renderMemory();
    this.skills.select(session?.agent ?? null);
    if (!session) return;
    await Promise.all([this.loadTodos(), this.loadWakeup(), this.shown === "skills" ? this.skills.load() : null]);
  }

  onEvent(event: ServerEvent): void {
    if (!this.session || event.sessionId !== this.session.id) return;
    if (event.type === "todo.updated" && Array.isArray(event.todos)) this.renderTodos(event.todos as Todo[]);
    if (event.type === "tool.end" && event.toolName === "schedule_wakeup") void this.loadWakeup();
  }

  /** After a reconnect: anything may have changed while the stream was down. */
  async refresh(): Promise<void> {
    if (this.session) await Promise.all([this.loadTodos(), this.loadWakeup()]);
  }

  private async loadTodos(): Promise<void> {
    const id = this.session!.id;
    const todos = await this.api.get<Todo[]>(`/sessions/${encodeURIComponent(id)}/todos`).catch(() => []);
    if (this.session?.id === id) this.renderTodos(todos);
  }

  private renderTodos(todos: Todo[]): void {
    if (todos.length === 0) {
      replaceChildren(this.todos, h("li", { class: "empty" }, this.session ? "No todos." : "No session selected."));
      return;
    }
    replaceChildren(
      this.todos,
      todos.map((todo) => h("li", { class: `todo ${todo.status}`, "data-status": todo.status }, h("span", { class: "todo-mark", "aria-label": todo.status.replace("_", " ") }, TODO_MARK[todo.status] ?? "○"), h("span", { class: "todo-text" }, todo.content), h("span", { class: `badge prio ${todo.priority}` }, todo.priority))),
    );
  }

  private async loadWakeup(): Promise<void> {
    const id = this.session!.id;
    try {
      const { wakeup } = await this.api.get<{ wakeup: Wakeup | null }>(`/sessions/${encodeURIComponent(id)}/wakeup`);
      if (this.session?.id !== id) return;
      this.wakeupState = wakeup;
      this.renderWakeup();
    } catch {
      // the session may be gone; the list refresh will show it
    }
  }

  private renderWakeup(): void {
    window.clearInterval(this.countdown);
    if (!this.session) return replaceChildren(this.wakeup, h("p", { class: "empty" }, "No session selected."));
    const current = this.wakeupState;
    const message = h("p", { class: "form-message", role: "status" });
    const time = h("input", { name: "time", required: true, placeholder: "30m, 90s, 2h", "aria-label": "Delay", value: current?.time ?? "" });
    const text = h("input", { name: "message", placeholder: "Message delivered on wake-up", "aria-label": "Wake-up message", value: current?.message ?? "" });
    const loop = h("input", { type: "checkbox", name: "loop", checked: current?.loop ?? false });
    const when = h("span", { class: "wake-when" });
    const tick = () => (when.textContent = current?.nextFireAt ? `next ${relativeTime(current.nextFireAt)} (${new Date(current.nextFireAt).toLocaleTimeString()})` : "");
    tick();
    if (current?.nextFireAt) this.countdown = window.setInterval(tick, 1000);
    const submit = async (event: Event) => {
      event.preventDefault();
      await this.act(message, () => this.api.post<{ wakeup: Wakeup | null }>(`/sessions/${encodeURIComponent(this.session!.id)}/wakeup`, { time: time.value.trim(), message: text.value, loop: loop.checked }));
    };
    const cancel = () => this.act(message, () => this.api.del<{ wakeup: null }>(`/sessions/${encodeURIComponent(this.session!.id)}/wakeup`));
    replaceChildren(
      this.wakeup,
      h("p", { class: "wake-current" }, current ? h("span", null, h("strong", null, current.loop ? `Every ${current.time}` : `Once, after ${current.time}`), current.message ? ` — “${current.message}”` : "", " ", when) : "No wake-up scheduled."),
      h(
        "form",
        { class: "stack", onsubmit: submit },
        h("label", null, "Delay ", time),
        h("label", null, "Message ", text),
        h("label", { class: "inline" }, loop, " repeat"),
        h("div", { class: "row" }, h("button", { type: "submit", class: "primary" }, current ? "Replace" : "Schedule"), current ? h("button", { type: "button", onclick: cancel }, "Cancel wake-up") : null),
      ),
      message,
    );
  }

  private async act(message: HTMLElement, run: () => Promise<{ wakeup: Wakeup | null }>): Promise<void> {
    try {
      const { wakeup } = await run();
      this.wakeupState = wakeup;
      this.renderWakeup();
    } catch (error) {
      message.textContent = (error as Error).message;
      message.className = "form-message error";
    }
  }

  private renderMemory(): void {
    if (!this.session) return replaceChildren(this.memory, h("p", { class: "empty" }, "No session selected."));
    const agent = this.session.agent;
    const scope = h("select", { "aria-label": "Memory scope" }, h("option", { value: "agent" }, `agent ${agent}`), h("option", { value: "global" }, "workspace (global)"));
    const file = h("input", { value: "MEMORY.md", "aria-label": "Memory file name" });
    const editor = h("textarea", { class: "memory-editor", rows: 14, spellcheck: "false", "aria-label": "Memory file content" });
    const message = h("p", { class: "form-message", role: "status" });
    const path = () => (scope.value === "global" ? `/memory/${encodeURIComponent(file.value)}` : `/agents/${encodeURIComponent(agent)}/memory/${encodeURIComponent(file.value)}`);
    const say = (text: string, error = false) => {
      message.textContent = text;
      message.className = `form-message${error ? " error" : ""}`;
    };
    const load = async () => {
      try {
        const response = await this.api.fetch(path(), { headers: { accept: "text/plain" } });
        if (response.status === 404) {
          editor.value = "";
          return say("This file does not exist yet; saving creates it.");
        }
        if (!response.ok) throw new ApiError(response.status, "HTTP", `load failed (${response.status})`);
        editor.value = await response.text();
        say(`Loaded ${file.value}.`);
      } catch (error) {
        say((error as Error).message, true);
      }
    };
    const save = async () => {
      try {
        const result = await this.api.put<{ bytes: number }>(path(), editor.value);
        say(`Saved (${result.bytes} bytes).`);
      } catch (error) {
        say((error as Error).message, true);
      }
    };
    scope.addEventListener("change", () => void load());
    file.addEventListener("change", () => void load());
    replaceChildren(
      this.memory,
      h("div", { class: "row" }, scope, file, h("button", { type: "button", onclick: load }, "Load")),
      editor,
      h("div", { class: "row" }, h("button", { type: "button", class: "primary", onclick: save }, "Save")),
      message,
    );
    void load();
  }
}

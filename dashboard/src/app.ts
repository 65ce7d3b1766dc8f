/** The signed-in dashboard: session tree, chat, side panel, remote dialogs, and the two live streams. */
import type { Api } from "./api.js";
import { ChatView } from "./chat-view.js";
import { h } from "./dom.js";
import { Panels } from "./panels.js";
import { RemoteDialogs } from "./remote-dialogs.js";
import { SessionHead } from "./session-head.js";
import { SessionsView, type SessionRow, type StatusFilter } from "./sessions-view.js";
import { LiveStream, type StreamState } from "./stream.js";
import { themeToggle } from "./theme.js";

/** A tab hidden this long closes its streams (and reopens them, catching up, when shown again). */
const HIDDEN_PAUSE_MS = 60_000;

export interface AppHandle {
  stop(): void;
}

export function startApp(root: HTMLElement, api: Api, signOut: () => void): AppHandle {
  const chat = new ChatView(api);
  const panels = new Panels(api);
  const dialogs = new RemoteDialogs(api);

  const head = new SessionHead(api, (row) => sessions.put(row));
  const sessions = new SessionsView(
    api,
    (row) => select(row),
    (row) => {
      head.render(row);
      chat.setWritable(row.status !== "closed" && row.status !== "suspended");
    },
  );

  const select = (row: SessionRow) => {
    sessions.select(row.id);
    head.render(row);
    document.body.classList.remove("show-sidebar");
    void chat.open(row.id, row.status !== "closed" && row.status !== "suspended");
    void panels.open(row);
  };

  const agentPicker = h("select", { "aria-label": "Agent for a new session", class: "agent-picker" }, h("option", { value: "default" }, "default"));
  const createMessage = h("p", { class: "form-message error", role: "alert" });
  const newSession = h("button", { type: "button", testid: "new-session", class: "primary" }, "New session");
  newSession.addEventListener("click", async () => {
    createMessage.textContent = "";
    newSession.disabled = true;
    try {
      const row = await api.post<SessionRow>("/sessions", { agent: agentPicker.value || "default" });
      sessions.put(row);
      select(row);
    } catch (error) {
      createMessage.textContent = `Could not create a session: ${(error as Error).message}`;
    } finally {
      newSession.disabled = false;
    }
  });
  const filter = h(
    "select",
    { "aria-label": "Show sessions", class: "filter", onchange: (event: Event) => sessions.setFilter((event.target as HTMLSelectElement).value as StatusFilter) },
    ([["active", "Open sessions"], ["all", "All sessions"], ["running", "Running"], ["idle", "Idle"], ["suspended", "Suspended"], ["closed", "Closed"]] as const).map(([value, label]) => h("option", { value }, label)),
  );

  const connection = h("span", { testid: "connection-status", class: "conn connecting", role: "status", "aria-label": "Connection" }, "connecting");
  const states: Record<string, StreamState> = { events: "connecting", methods: "connecting" };
  const showState = (name: string, state: StreamState) => {
    states[name] = state;
    const all = Object.values(states);
    const shown = all.every((s) => s === "live") ? "live" : all.includes("reconnecting") ? "reconnecting" : all.includes("paused") ? "paused" : "connecting";
    connection.textContent = shown;
    connection.className = `conn ${shown}`;
  };

  const events = new LiveStream({
    api,
    path: "/events",
    onState: (state) => showState("events", state),
    onEvent: (event) => {
      if (event.type === "method.pending" || event.type === "method.done") return;
      sessions.onEvent(event);
      chat.onEvent(event);
      panels.onEvent(event);
    },
    onOpen: (resumed) => {
      if (!resumed) return;
      void sessions.refresh().catch(() => undefined);
      void chat.resync();
      void panels.refresh();
    },
  });
  const methods = new LiveStream({
    api,
    path: "/remote-methods",
    onState: (state) => showState("methods", state),
    onEvent: (event) => dialogs.onEvent(event),
    onOpen: (resumed) => {
      if (resumed) void dialogs.reconcile().catch(() => undefined);
    },
  });

  const toggle = (cls: string) => () => document.body.classList.toggle(cls);
  root.replaceChildren(
    h(
      "header",
      { class: "topbar" },
      h("button", { type: "button", class: "only-narrow", "aria-label": "Open the session list", onclick: toggle("show-sidebar") }, "☰"),
      h("span", { class: "brand" }, "Veil"),
      connection,
      h("span", { class: "spacer" }),
      h("button", { type: "button", class: "only-narrow", onclick: toggle("show-panels") }, "Details"),
      themeToggle(),
      h("button", { type: "button", onclick: signOut }, "Sign out"),
    ),
    h(
      "div",
      { class: "layout" },
      h("nav", { class: "sidebar", "aria-label": "Sessions" }, h("div", { class: "sidebar-head" }, h("div", { class: "row" }, agentPicker, newSession), filter, createMessage), sessions.el),
      h("main", { class: "main" }, head.el, chat.el),
      panels.el,
    ),
    dialogs.el,
  );

  document.addEventListener("keydown", onKey);
  let pauseTimer: number | undefined;
  const onVisibility = () => {
    window.clearTimeout(pauseTimer);
    if (document.hidden) {
      pauseTimer = window.setTimeout(() => {
        events.pause();
        methods.pause();
      }, HIDDEN_PAUSE_MS);
    } else {
      events.resume();
      methods.resume();
    }
  };
  document.addEventListener("visibilitychange", onVisibility);
  function onKey(event: KeyboardEvent) {
    const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement || event.target instanceof HTMLSelectElement;
    if (event.key === "/" && !typing) {
      event.preventDefault();
      root.querySelector<HTMLTextAreaElement>("[data-testid=chat-input]")?.focus();
    } else if (event.key === "Escape") {
      document.body.classList.remove("show-sidebar", "show-panels");
    }
  }

  void api
    .get<{ name: string; description?: string }[]>("/agents")
    .then((agents) => {
      agentPicker.replaceChildren(...agents.map((agent) => h("option", { value: agent.name, title: agent.description ?? "", selected: agent.name === "default" }, agent.name)));
    })
    .catch(() => undefined);
  void sessions.refresh().catch(() => undefined);
  events.start();
  methods.start();

  return {
    stop() {
      events.stop();
      methods.stop();
      dialogs.clear();
      document.removeEventListener("keydown", onKey);
      document.removeEventListener("visibilitychange", onVisibility);
      window.clearTimeout(pauseTimer);
    },
  };
}

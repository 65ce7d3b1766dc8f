/** The signed-in dashboard: session tree, chat, side panel, remote dialogs, and the two live streams. */
import type { Api } from "./api.js";
import { AdminView, canAdminister } from "./admin-view.js";
import { ChatView } from "./chat-view.js";
import { ConnectionIndicator, pauseWhileHidden } from "./connection.js";
import { h } from "./dom.js";
import { Panels } from "./panels.js";
import { RemoteDialogs } from "./remote-dialogs.js";
import { SchedulesView } from "./schedules-view.js";
import { SessionHead } from "./session-head.js";
import { SessionsView, type SessionRow } from "./sessions-view.js";
import { sidebarControls } from "./sidebar-controls.js";
import { LiveStream } from "./stream.js";
import { sessionInAddress, showInAddress, watchAddress } from "./route.js";
import { themeToggle } from "./theme.js";
import { sandboxBadge } from "./sandbox-badge.js";

export interface AppHandle {
  stop(): void;
}

const writable = (row: SessionRow) => row.status !== "closed" && row.status !== "suspended";

export function startApp(root: HTMLElement, api: Api, signOut: () => void): AppHandle {
  const head = new SessionHead(api, (row) => sessions.put(row));
  const chat = new ChatView(
    api,
    (sessionId, usd) => head.setChatCost(sessionId, usd),
    (row) => {
      sessions.put(row);
      select(row);
    },
  );
  const panels = new Panels(api);
  const dialogs = new RemoteDialogs(api);
  const select = (row: SessionRow) => {
    showInAddress(row.id);
    sessions.select(row.id);
    head.render(row);
    document.body.classList.remove("show-sidebar");
    void chat.open(row.id, writable(row), Boolean(row.forked_from));
    chat.setStatus(row);
    void panels.open(row);
  };
  /** The session the address names: from the list, else asked for (a closed one the filter hides). */
  const openFromAddress = async (id: string | null) => {
    if (!id || id === chat.currentSession) return;
    const row = sessions.get(id) ?? (await api.get<SessionRow>(`/sessions/${encodeURIComponent(id)}`).catch(() => null));
    if (sessionInAddress() !== id) return;
    if (row) return select(row);
    head.render(null);
    head.say(`No session ${id} on this server.`);
  };
  const sessions = new SessionsView(api, select, (row) => {
    head.render(row);
    chat.setWritable(writable(row));
    chat.setStatus(row);
  });
  const schedules = new SchedulesView(api, (sessionId) => {
    void api.get<SessionRow>(`/sessions/${encodeURIComponent(sessionId)}`).then((row) => {
      sessions.put(row);
      select(row);
    });
  });

  const connection = new ConnectionIndicator(["events"]);
  // One stream for everything, dialogs included: a browser gives a host six connections
  // over HTTP/1.1, and a stream per concern let three tabs use them all up.
  const events = new LiveStream({
    api,
    path: "/events",
    query: { methods: "pending" },
    onState: (state) => connection.set("events", state),
    onEvent: (event) => {
      if (event.type === "method.pending" || event.type === "method.done") return dialogs.onEvent(event);
      sessions.onEvent(event);
      chat.onEvent(event);
      panels.onEvent(event);
    },
    onOpen: (resumed) => {
      if (!resumed) return;
      void sessions.refresh().catch(() => undefined);
      void chat.resync();
      void panels.refresh();
      void dialogs.reconcile().catch(() => undefined);
    },
  });

  const controls = sidebarControls(
    api,
    (row) => {
      sessions.put(row);
      select(row);
    },
    (filter) => sessions.setFilter(filter),
    (query) => sessions.setQuery(query),
  );
  const admin = new AdminView(api);
  const adminButton = h("button", { type: "button", testid: "admin-open", hidden: true, onclick: () => void admin.show() }, "Keys");
  // Only a credential that may manage keys sees the button (any other gets 403 from /keys).
  void canAdminister(api).then((allowed) => (adminButton.hidden = !allowed), () => undefined);
  root.replaceChildren(
    topbar(connection.el, sandboxBadge(api), [schedules.button, adminButton], signOut),
    h("div", { class: "layout" }, h("nav", { class: "sidebar", "aria-label": "Sessions" }, controls, sessions.el), h("main", { class: "main" }, head.el, chat.el), panels.el),
    schedules.el,
    dialogs.el,
    admin.el,
  );

  const onKey = (event: KeyboardEvent) => {
    const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement || event.target instanceof HTMLSelectElement;
    if (event.key === "/" && !typing) {
      event.preventDefault();
      root.querySelector<HTMLTextAreaElement>("[data-testid=chat-input]")?.focus();
    } else if (event.key === "Escape") {
      document.body.classList.remove("show-sidebar", "show-panels");
      if (!schedules.el.hidden) schedules.close();
    }
  };
  document.addEventListener("keydown", onKey);
  const unhookVisibility = pauseWhileHidden([events]);
  const unwatchAddress = watchAddress((id) => void openFromAddress(id));

  void sessions
    .refresh()
    .catch(() => undefined)
    .then(() => openFromAddress(sessionInAddress()));
  events.start();
  return {
    stop() {
      events.stop();
      schedules.close();
      dialogs.clear();
      unhookVisibility();
      unwatchAddress();
      document.removeEventListener("keydown", onKey);
    },
  };
}

function topbar(connection: HTMLElement, sandbox: HTMLElement, buttons: readonly HTMLElement[], signOut: () => void): HTMLElement {
  const toggle = (cls: string) => () => document.body.classList.toggle(cls);
  return h(
    "header",
    { class: "topbar" },
    h("button", { type: "button", class: "only-narrow", "aria-label": "Open the session list", onclick: toggle("show-sidebar") }, "☰"),
    h("span", { class: "brand" }, "Veil"),
    connection,
    sandbox,
    h("span", { class: "spacer" }),
    ...buttons,
    h("button", { type: "button", class: "only-narrow", onclick: toggle("show-panels") }, "Details"),
    themeToggle(),
    h("button", { type: "button", onclick: signOut }, "Sign out"),
  );
}

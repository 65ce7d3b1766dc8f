/** Above the session tree: the agent picker with "New session", the status filter, and a message line. */
import type { Api } from "./api.js";
import { h } from "./dom.js";
import type { SessionRow, StatusFilter } from "./sessions-view.js";

const FILTERS = [
  ["active", "Open sessions"],
  ["all", "All sessions"],
  ["running", "Running"],
  ["idle", "Idle"],
  ["suspended", "Suspended"],
  ["closed", "Closed"],
] as const;

/** How long the search waits after the last key before asking the server. */
const SEARCH_PAUSE_MS = 200;

export function sidebarControls(api: Api, onCreated: (row: SessionRow) => void, onFilter: (filter: StatusFilter) => void, onSearch: (query: string) => void): HTMLElement {
  const agentPicker = h("select", { "aria-label": "Agent for a new session", class: "agent-picker" }, h("option", { value: "default" }, "default"));
  const message = h("p", { class: "form-message error", role: "alert" });
  const newSession = h("button", { type: "button", testid: "new-session", class: "primary" }, "New session");
  newSession.addEventListener("click", async () => {
    message.textContent = "";
    newSession.disabled = true;
    try {
      onCreated(await api.post<SessionRow>("/sessions", { agent: agentPicker.value || "default" }));
    } catch (error) {
      message.textContent = `Could not create a session: ${(error as Error).message}`;
    } finally {
      newSession.disabled = false;
    }
  });
  const filter = h(
    "select",
    { "aria-label": "Show sessions", class: "filter", onchange: (event: Event) => onFilter((event.target as HTMLSelectElement).value as StatusFilter) },
    FILTERS.map(([value, label]) => h("option", { value }, label)),
  );
  void api
    .get<{ name: string; description?: string }[]>("/agents")
    .then((agents) => agentPicker.replaceChildren(...agents.map((agent) => h("option", { value: agent.name, title: agent.description ?? "", selected: agent.name === "default" }, agent.name))))
    .catch(() => undefined);
  const search = h("input", { type: "search", testid: "session-search", class: "session-search", placeholder: "Search titles, ids, agents", "aria-label": "Search sessions" });
  let pause: number | undefined;
  search.addEventListener("input", () => {
    window.clearTimeout(pause);
    pause = window.setTimeout(() => onSearch(search.value), SEARCH_PAUSE_MS);
  });
  return h("div", { class: "sidebar-head" }, h("div", { class: "row" }, agentPicker, newSession), search, filter, message);
}

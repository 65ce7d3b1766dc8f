/**
 * The admin page (the server secret or an `admin` key): every API key with its scopes,
 * limits and spend, a form to make one (its value shown once), revoke buttons, and the
 * audit trail of requests that changed something. A key without `admin` never sees it
 * (GET /keys answers 403, and the Admin button stays hidden).
 */
import { ApiError, type Api } from "./api.js";
import { h, replaceChildren } from "./dom.js";
import type { ApiKey as KeyRow, AuditEntry } from "../../src/client/types.js";

const usd = (n: number) => `$${n.toFixed(4)}`;

/** True when this credential may manage keys. */
export async function canAdminister(api: Api): Promise<boolean> {
  const response = await api.fetch("/keys");
  await response.body?.cancel().catch(() => undefined);
  return response.ok;
}

export class AdminView {
  readonly el: HTMLElement;
  private readonly keys = h("tbody");
  private readonly audit = h("ol", { testid: "audit-list", class: "audit-list" });
  private readonly created = h("p", { class: "admin-created", hidden: true });
  private readonly error = h("p", { class: "login-error", role: "alert" });

  constructor(private readonly api: Api) {
    const name = h("input", { testid: "key-create-name", placeholder: "name", required: true });
    const scopes = h("select", { testid: "key-create-scopes" }, ...["read", "chat", "admin"].map((s) => h("option", { value: s }, s)));
    const agents = h("input", { testid: "key-create-agents", placeholder: "agents (comma-separated, empty: any)" });
    const rpm = h("input", { testid: "key-create-rpm", type: "number", min: 1, placeholder: "requests/min" });
    const budget = h("input", { testid: "key-create-budget", type: "number", min: 0, step: "any", placeholder: "budget USD" });
    const form = h("form", { class: "admin-create" }, name, scopes, agents, rpm, budget, h("button", { testid: "key-create-submit", type: "submit", class: "primary" }, "Create key"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const list = agents.value.split(",").map((s) => s.trim()).filter(Boolean);
      void this.create({
        name: name.value.trim(),
        scopes: [scopes.value],
        ...(list.length ? { agents: list } : {}),
        ...(rpm.value ? { requestsPerMinute: Number(rpm.value) } : {}),
        ...(budget.value ? { budgetUsd: Number(budget.value) } : {}),
      }).then(() => form.reset());
    });
    const table = h("table", { testid: "keys-table", class: "keys-table" }, h("thead", null, h("tr", null, ...["Name", "Scopes", "Agents", "Limit", "Spend / budget", "State", ""].map((t) => h("th", null, t)))), this.keys);
    this.el = h(
      "div",
      { class: "remote-layer", testid: "admin-page", hidden: true },
      h(
        "section",
        { class: "remote-dialog admin-dialog", role: "dialog", "aria-label": "Keys and audit" },
        h("h2", null, "API keys"),
        form,
        this.created,
        this.error,
        table,
        h("h2", null, "Audit"),
        this.audit,
        h("button", { type: "button", testid: "admin-close", onclick: () => this.hide() }, "Close"),
      ),
    );
  }

  async show(): Promise<void> {
    this.el.hidden = false;
    await this.refresh();
  }

  hide(): void {
    this.el.hidden = true;
    this.created.hidden = true;
    this.created.textContent = "";
  }

  async refresh(): Promise<void> {
    const [{ keys }, { entries }] = await Promise.all([this.api.get<{ keys: KeyRow[] }>("/keys"), this.api.get<{ entries: AuditEntry[] }>("/audit?limit=1000")]);
    replaceChildren(this.keys, ...keys.map((key) => this.keyRow(key)));
    replaceChildren(this.audit, ...entries.slice(-200).reverse().map(auditItem));
  }

  private async create(body: Record<string, unknown>): Promise<void> {
    this.error.textContent = "";
    try {
      const made = await this.api.post<KeyRow & { key: string }>("/keys", body);
      // The value is shown here once: the server keeps only its hash.
      replaceChildren(this.created, "New key (copy it now, it is not shown again): ", h("code", { testid: "key-created-value" }, made.key));
      this.created.hidden = false;
      await this.refresh();
    } catch (error) {
      this.error.textContent = error instanceof ApiError ? `${error.code}: ${error.message}` : String(error);
    }
  }

  private keyRow(key: KeyRow): HTMLElement {
    const state = key.revokedAt ? "revoked" : key.expiresAt && Date.parse(key.expiresAt) <= Date.now() ? "expired" : "active";
    const revoke = h("button", { type: "button", testid: "key-revoke", disabled: state !== "active" }, "Revoke");
    revoke.addEventListener("click", async () => {
      revoke.disabled = true;
      await this.api.del(`/keys/${encodeURIComponent(key.id)}`);
      await this.refresh();
    });
    return h(
      "tr",
      { testid: "key-row", "data-key-id": key.id, "data-state": state },
      h("td", null, h("strong", null, key.name), h("br"), h("code", null, `${key.prefix}…`)),
      h("td", null, key.scopes.join(", ")),
      h("td", null, key.agents?.join(", ") ?? "any"),
      h("td", null, key.requestsPerMinute ? `${key.requestsPerMinute}/min` : "—"),
      h("td", { class: "key-spend" }, `${usd(key.spentUsd)}${key.budgetUsd !== null ? ` / ${usd(key.budgetUsd)}` : ""}`),
      h("td", { class: "key-state" }, state),
      h("td", null, revoke),
    );
  }
}

function auditItem(entry: AuditEntry): HTMLElement {
  return h(
    "li",
    { testid: "audit-entry", "data-status": entry.status, "data-key": entry.key },
    h("time", null, entry.at.replace("T", " ").slice(0, 19)),
    ` ${entry.key} ${entry.method} ${entry.path} → ${entry.status}`,
    entry.sessionId ? ` (${entry.sessionId})` : "",
  );
}

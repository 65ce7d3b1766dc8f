/**
 * Remote methods (a tool waiting on an answer from outside): every `method.pending`
 * opens a dialog — `confirm` asks yes/no, `user-dialog` and `ask_user` take a text
 * answer, `tool_approval` shows the tool call waiting to run with Approve / Deny (and an
 * optional reason), anything else shows its JSON data and takes a JSON answer. The first answer
 * from any tab wins; `method.done` closes the dialog everywhere else.
 */
import { ApiError, type Api } from "./api.js";
import { h, replaceChildren } from "./dom.js";
import { pretty, shortId } from "./format.js";
import type { ServerEvent } from "./stream.js";

interface Pending {
  id: string;
  method: string;
  data: unknown;
  sessionId?: string;
}

const TEXT_METHODS = new Set(["user-dialog", "ask_user"]);
/** A tool call waiting for a person (`data: { toolName, toolInput, toolCallId }`). */
const APPROVAL = "tool_approval";

function heading(method: Pending): string {
  if (method.method === APPROVAL) {
    const tool = (method.data as { toolName?: unknown } | null)?.toolName;
    return `Run ${typeof tool === "string" ? tool : "this tool"}?`;
  }
  return method.method === "confirm" ? "Confirm" : TEXT_METHODS.has(method.method) ? "The agent asks" : `Remote method “${method.method}”`;
}

/** Approve runs the call; Deny answers the model with the reason typed (or a default one). */
function approvalBody(answer: (result: unknown) => Promise<void>): HTMLElement[] {
  const reason = h("input", { type: "text", testid: "approval-reason", "aria-label": "Reason (optional, sent to the agent when you deny)", placeholder: "Reason to deny (optional)" });
  const deny = () => answer({ approved: false, reason: reason.value.trim() || "denied in the dashboard" });
  reason.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      void deny();
    }
  });
  return [
    reason,
    h(
      "div",
      { class: "row end" },
      h("button", { type: "button", testid: "approval-deny", onclick: deny }, "Deny"),
      h("button", { type: "button", testid: "approval-approve", class: "primary", onclick: () => answer({ approved: true }) }, "Approve"),
    ),
  ];
}

export class RemoteDialogs {
  readonly el: HTMLElement;
  private readonly open = new Map<string, HTMLElement>();

  constructor(private readonly api: Api) {
    this.el = h("div", { class: "remote-layer", hidden: true });
  }

  onEvent(event: ServerEvent): void {
    if (event.type === "method.pending" && typeof event.id === "string") this.show(event as unknown as Pending);
    else if (event.type === "method.done" && typeof event.id === "string") this.dismiss(event.id);
  }

  /** After a reconnect: a dialog whose method ended while the stream was down is closed. */
  async reconcile(): Promise<void> {
    const before = [...this.open.keys()];
    const { pending } = await this.api.get<{ pending: string[] }>("/remote-methods/pending");
    for (const id of before) if (!pending.includes(id)) this.dismiss(id);
  }

  private show(method: Pending): void {
    if (this.open.has(method.id)) return;
    const card = this.build(method);
    this.open.set(method.id, card);
    this.el.appendChild(card);
    this.el.hidden = false;
    if (this.open.size === 1) card.querySelector<HTMLElement>("textarea, input, button")?.focus();
  }

  private dismiss(id: string): void {
    const card = this.open.get(id);
    if (!card) return;
    const hadFocus = card.contains(document.activeElement);
    card.remove();
    this.open.delete(id);
    this.el.hidden = this.open.size === 0;
    if (hadFocus) this.el.querySelector<HTMLElement>("textarea, input, button")?.focus();
  }

  private build(method: Pending): HTMLElement {
    const data = method.data as Record<string, unknown> | null;
    const prompt = data && typeof data === "object" ? ["question", "message", "prompt", "text", "title"].map((key) => data[key]).find((v) => typeof v === "string") : typeof data === "string" ? data : undefined;
    const error = h("p", { class: "form-message error", role: "alert" });
    const headingId = `remote-${method.id}`;
    const answer = async (result: unknown) => {
      error.textContent = "";
      try {
        await this.api.post(`/remote-methods/${encodeURIComponent(method.id)}/result`, { result });
        this.dismiss(method.id);
      } catch (failure) {
        if (failure instanceof ApiError && failure.status === 409) {
          // Another tab (or the timeout) got there first.
          this.dismiss(method.id);
          return;
        }
        error.textContent = `Could not send the answer: ${(failure as Error).message}`;
      }
    };
    let body: HTMLElement[];
    if (method.method === APPROVAL) {
      body = approvalBody(answer);
    } else if (method.method === "confirm") {
      body = [h("div", { class: "row end" }, h("button", { type: "button", onclick: () => answer(false) }, "No"), h("button", { type: "button", testid: "remote-answer", class: "primary", onclick: () => answer(true) }, "Yes"))];
    } else if (TEXT_METHODS.has(method.method)) {
      const field = h("textarea", { testid: "remote-answer", rows: 3, "aria-label": "Your answer", required: true });
      field.addEventListener("keydown", (event) => {
        if (event.key === "Enter" && !event.shiftKey) {
          event.preventDefault();
          void answer(field.value);
        }
      });
      body = [field, h("div", { class: "row end" }, h("button", { type: "button", testid: "remote-submit", class: "primary", onclick: () => answer(field.value) }, "Answer"))];
    } else {
      const field = h("textarea", { testid: "remote-answer", rows: 4, class: "mono", spellcheck: "false", "aria-label": "Answer as JSON", placeholder: '{"ok": true}' });
      const submit = () => {
        let value: unknown;
        try {
          value = JSON.parse(field.value);
        } catch (parseError) {
          error.textContent = `The answer is not valid JSON: ${(parseError as Error).message}`;
          return;
        }
        void answer(value);
      };
      body = [field, h("div", { class: "row end" }, h("button", { type: "button", testid: "remote-submit", class: "primary", onclick: submit }, "Send JSON"))];
    }
    const card = h(
      "section",
      { testid: "remote-dialog", class: "remote-dialog", role: "dialog", "aria-modal": "true", "aria-labelledby": headingId, "data-method": method.method, "data-remote-id": method.id },
      h("h2", { id: headingId }, heading(method), method.sessionId ? h("span", { class: "row-id" }, ` · ${shortId(method.sessionId)}`) : null),
      method.method === APPROVAL ? h("pre", { class: "remote-data", testid: "approval-input" }, pretty(data?.toolInput)) : null,
      method.method !== APPROVAL && prompt ? h("p", { class: "remote-prompt" }, prompt) : null,
      method.method !== APPROVAL && (!prompt || (method.method !== "confirm" && !TEXT_METHODS.has(method.method))) ? h("pre", { class: "remote-data" }, pretty(method.data)) : null,
      body,
      error,
    );
    return card;
  }

  clear(): void {
    this.open.clear();
    replaceChildren(this.el);
    this.el.hidden = true;
  }
}

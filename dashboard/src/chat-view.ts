/**
 * The chat of the selected session: history, live events, and the composer.
 * Events for the session that arrive while history loads are held back, then applied
 * past what history already covered, so the switch from history to live has no gap
 * and no duplicate.
 */
import { errorOf, type Api } from "./api.js";
import { CheckpointActions } from "./checkpoint-actions.js";
import { h, perFrame, replaceChildren } from "./dom.js";
import { loadHistory, type HistoryMode } from "./history.js";
import { createItemElement, renderItem } from "./item-views.js";
import type { SessionRow } from "./sessions-view.js";
import type { ServerEvent } from "./stream.js";
import { Timeline, type Item } from "./timeline.js";

export class ChatView {
  readonly el: HTMLElement;
  private readonly log: HTMLElement;
  private readonly input: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly status: HTMLElement;
  private readonly queued: HTMLElement;
  private timeline = new Timeline();
  private readonly elements = new Map<Item, HTMLElement>();
  private sessionId: string | null = null;
  private mode: HistoryMode | undefined;
  private loading = false;
  private held: ServerEvent[] = [];
  private generation = 0;
  private readonly pending: string[] = [];
  private readonly flush = perFrame(() => this.render());

  private reportedCost: number | undefined;
  private readonly checkpoints: CheckpointActions;
  private readonly decorateAll = perFrame(() => this.decorate());

  /** `onCost` hears the session's spend summed from its runs' chat.done events, when they carry one; `onForked` gets a session forked from this one. */
  constructor(
    private readonly api: Api,
    private readonly onCost: (sessionId: string, usd: number) => void = () => {},
    onForked: (row: SessionRow) => void = () => {},
  ) {
    this.checkpoints = new CheckpointActions(api, this.decorateAll, (text) => this.sayError(text), onForked);
    this.log = h("div", { class: "chat-log", "aria-live": "polite", "aria-label": "Conversation", tabindex: "0" });
    this.input = h("textarea", { testid: "chat-input", class: "chat-input", rows: 2, placeholder: "Message the agent (Enter to send, Shift+Enter for a new line)", "aria-label": "Message", disabled: true });
    this.sendButton = h("button", { testid: "chat-send", type: "submit", class: "primary", disabled: true }, "Send");
    this.status = h("div", { class: "composer-status", role: "status" });
    this.queued = h("div", { class: "queued" });
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        void this.send();
      }
    });
    const form = h("form", { class: "composer", onsubmit: (event: Event) => (event.preventDefault(), void this.send()) }, this.input, this.sendButton);
    this.el = h("section", { class: "chat" }, this.log, this.queued, this.status, form);
    this.showEmpty("Select a session, or create one with “New session”.");
  }

  get currentSession(): string | null {
    return this.sessionId;
  }

  /** Shows a session: clears the view, loads its history, then goes live. */
  async open(sessionId: string, writable: boolean, forked = false): Promise<void> {
    this.sessionId = sessionId;
    // A fork's copied rows are in its messages only (no events were published for them).
    this.mode = forked ? "messages" : undefined;
    this.setWritable(writable);
    this.pending.length = 0;
    this.renderQueued();
    this.status.textContent = "";
    void this.checkpoints.open(sessionId);
    await this.reload();
    if (writable) this.input.focus();
  }

  close(): void {
    this.sessionId = null;
    this.generation++;
    this.checkpoints.close();
    this.setWritable(false);
    this.showEmpty("Select a session, or create one with “New session”.");
  }

  setWritable(writable: boolean): void {
    this.input.disabled = !writable;
    this.sendButton.disabled = !writable;
  }

  /** The open session's row changed: revert waits while it runs, nothing is offered once it is closed. */
  setStatus(row: SessionRow): void {
    if (row.id !== this.sessionId) return;
    this.checkpoints.setState(row.status === "running", row.status !== "closed" && row.status !== "suspended");
  }

  /** A live event from the server-wide stream. */
  onEvent(event: ServerEvent): void {
    if (!this.sessionId || event.sessionId !== this.sessionId) return;
    if (this.loading) {
      this.held.push(event);
      return;
    }
    this.applyLive(event);
    this.flush();
    // A turn that ended may have left a checkpoint; a new message ends the chance to unrevert.
    if (event.type === "chat.done" || (event.type === "chat.message" && event.role === "user")) void this.checkpoints.refresh();
  }

  /** After the stream reconnected: fetch what was missed (event log) or reload (messages). */
  async resync(): Promise<void> {
    if (!this.sessionId) return;
    if (this.mode === "events") await this.catchUp(false);
    else await this.reload();
  }

  private async reload(): Promise<void> {
    this.timeline = new Timeline();
    this.reportedCost = undefined;
    this.elements.clear();
    replaceChildren(this.log, h("div", { class: "empty" }, "Loading…"));
    await this.catchUp(true);
  }

  private async catchUp(fresh: boolean): Promise<void> {
    const sessionId = this.sessionId!;
    const generation = ++this.generation;
    this.loading = true;
    this.held = [];
    try {
      this.mode = await loadHistory(this.api, sessionId, this.timeline, this.mode);
    } catch (error) {
      if (generation !== this.generation) return;
      this.loading = false;
      this.showEmpty(`Could not load the history: ${(error as Error).message}`);
      return;
    }
    if (generation !== this.generation) return;
    this.loading = false;
    const held = this.held;
    this.held = [];
    for (const event of this.afterKnown(held)) this.applyLive(event);
    if (fresh) replaceChildren(this.log);
    this.render(fresh);
  }

  /** Held events past what history covered: everything before the last event history already had is in it. */
  private afterKnown(held: ServerEvent[]): ServerEvent[] {
    let lastKnown = -1;
    held.forEach((event, index) => {
      const known =
        this.mode === "events"
          ? typeof event.seq === "number" && event.seq <= this.timeline.lastSeq
          : event.type === "chat.message" && this.timeline.items.some((item) => item.kind === "message" && item.id === event.id);
      if (known) lastKnown = index;
    });
    return held.slice(lastKnown + 1);
  }

  private applyLive(event: ServerEvent): void {
    // With a durable log, seq is stable across restarts: anything at or below it is a replay.
    if (this.mode === "events" && typeof event.seq === "number" && event.seq <= this.timeline.lastSeq) return;
    this.timeline.apply(event);
    if (event.type === "chat.message" && event.role === "user") {
      const index = this.pending.indexOf(String(event.content));
      if (index >= 0) {
        this.pending.splice(index, 1);
        this.renderQueued();
      }
    }
  }

  private render(forceBottom = false): void {
    const cost = this.timeline.costUsd;
    if (cost !== undefined && cost !== this.reportedCost && this.sessionId) {
      this.reportedCost = cost;
      this.onCost(this.sessionId, cost);
    }
    const nearBottom = forceBottom || this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 80;
    const { changed, removed } = this.timeline.takeChanges();
    for (const item of removed) {
      this.elements.get(item)?.remove();
      this.elements.delete(item);
    }
    if (this.log.querySelector(":scope > .empty") && this.timeline.items.length > 0) replaceChildren(this.log);
    const fragment = document.createDocumentFragment();
    for (const item of changed) {
      let el = this.elements.get(item);
      if (!el) {
        el = createItemElement(item);
        this.elements.set(item, el);
        fragment.appendChild(el);
      }
      renderItem(el, item);
    }
    this.log.appendChild(fragment);
    if (changed.length > 0) this.decorate();
    if (this.timeline.items.length === 0 && !this.log.firstChild) this.log.appendChild(h("div", { class: "empty" }, "No messages yet. Say something below."));
    if (nearBottom) this.log.scrollTop = this.log.scrollHeight;
  }

  /** Reverted turns dimmed (a user message and everything after it up to the next one), user messages with their actions. */
  private decorate(): void {
    let reverted = false;
    for (const item of this.timeline.items) {
      const el = this.elements.get(item);
      if (item.kind === "message" && item.role === "user") reverted = this.checkpoints.isReverted(item.id);
      if (!el) continue;
      el.classList.toggle("reverted", reverted);
      if (item.kind === "message" && item.role === "user") {
        this.checkpoints.decorate(el, item.id);
        el.nextElementSibling?.classList.toggle("reverted", reverted);
      }
    }
  }

  private sayError(text: string): void {
    this.status.textContent = text;
    this.status.className = "composer-status error";
  }

  private async send(): Promise<void> {
    const text = this.input.value.trim();
    const sessionId = this.sessionId;
    if (!text || !sessionId || this.input.disabled) return;
    this.input.value = "";
    this.status.textContent = "";
    this.pending.push(text);
    this.renderQueued();
    try {
      // The streamed form answers as soon as the message is stored; the server-wide stream
      // already carries the turn, so the body is dropped and no connection stays busy.
      const response = await this.api.fetch(`/sessions/${encodeURIComponent(sessionId)}/chat`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({ message: text, stream: true }),
      });
      if (!response.ok) throw await errorOf(response);
      void response.body?.cancel().catch(() => undefined);
    } catch (error) {
      this.pending.splice(this.pending.indexOf(text), 1);
      this.renderQueued();
      if (this.sessionId === sessionId && !this.input.value) this.input.value = text;
      this.sayError(`Not sent: ${(error as Error).message}`);
    }
  }

  private renderQueued(): void {
    replaceChildren(this.queued, this.pending.map((text) => h("div", { testid: "message-pending", class: "pending" }, h("span", { class: "badge" }, "queued"), " ", text)));
  }

  private showEmpty(text: string): void {
    replaceChildren(this.log, h("div", { class: "empty" }, text));
  }
}

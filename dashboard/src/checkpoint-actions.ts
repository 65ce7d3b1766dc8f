/**
 * Revert, Unrevert and Fork on the user messages of the open chat. A user message that
 * started a turn which changed files gets "Revert" (it first lists the files the revert will
 * put back: its turn's and every later turn's); the message an unrevert would undo gets
 * "Unrevert" while no message came after it; every user message gets "Fork" (a new session
 * with the history up to and including its turn). Reverted turns stay in view, dimmed.
 */
import type { Api } from "./api.js";
import { h } from "./dom.js";
import type { SessionRow } from "./sessions-view.js";

type FileChange = "added" | "modified" | "deleted";
interface ChangedFile {
  path: string;
  change: FileChange;
}
interface CheckpointsAnswer {
  checkpoints: { id: string; messageId: string; files: ChangedFile[] }[];
  revert: { messageId: string; files: ChangedFile[] } | null;
  reverted?: string[];
}

export class CheckpointActions {
  private sessionId: string | null = null;
  private answer: CheckpointsAnswer = { checkpoints: [], revert: null, reverted: [] };
  private reverted = new Set<string>();
  /** Bumped on every new answer: a message element decorated with an older one is decorated again. */
  private version = 0;
  private generation = 0;
  private running = false;
  private writable = false;
  /** The message whose Revert list is open. */
  private confirming: string | null = null;
  private busy = false;

  /**
   * `onChange`: the state changed, the chat decorates its messages again. `say`: a line under
   * the chat (a failed action). `onForked`: the new session, to open.
   */
  constructor(
    private readonly api: Api,
    private readonly onChange: () => void,
    private readonly say: (text: string) => void,
    private readonly onForked: (row: SessionRow) => void,
  ) {}

  /** A session was opened: forget the last one's state and ask for this one's. */
  open(sessionId: string): Promise<void> {
    this.sessionId = sessionId;
    this.answer = { checkpoints: [], revert: null, reverted: [] };
    this.reverted = new Set();
    this.confirming = null;
    this.version++;
    return this.refresh();
  }

  close(): void {
    this.sessionId = null;
    this.generation++;
  }

  /** The session's status: nothing is reverted while it runs (the server answers 409), and a closed one takes no action. */
  setState(running: boolean, writable: boolean): void {
    if (running === this.running && writable === this.writable) return;
    this.running = running;
    this.writable = writable;
    this.version++;
    this.onChange();
  }

  /** Asks the server again (after a turn ended, a message was sent, or an action). */
  async refresh(): Promise<void> {
    const sessionId = this.sessionId;
    if (!sessionId) return;
    const generation = ++this.generation;
    let answer: CheckpointsAnswer;
    try {
      answer = await this.api.get<CheckpointsAnswer>(`/sessions/${encodeURIComponent(sessionId)}/checkpoints`);
    } catch {
      return; // a server without checkpoints, or a dropped connection: no buttons
    }
    if (generation !== this.generation) return;
    this.answer = answer;
    this.reverted = new Set(answer.reverted ?? []);
    this.version++;
    this.onChange();
  }

  isReverted(messageId: string | null): boolean {
    return messageId !== null && this.reverted.has(messageId);
  }

  /**
   * Puts the actions of one user message right after its element (again, when the state
   * changed since): beside the bubble, not in it, so the bubble's text stays the message's.
   */
  decorate(el: HTMLElement, messageId: string | null): void {
    const next = el.nextElementSibling;
    const existing = next instanceof HTMLElement && next.classList.contains("msg-actions") ? next : null;
    if (existing && existing.dataset.version === String(this.version) && existing.dataset.messageId === messageId) return;
    const actions = messageId && this.sessionId ? this.actionsFor(messageId) : null;
    if (!actions) return void existing?.remove();
    actions.dataset.version = String(this.version);
    actions.dataset.messageId = messageId!;
    if (existing) existing.replaceWith(actions);
    else el.after(actions);
  }

  private actionsFor(messageId: string): HTMLElement | null {
    const { revert } = this.answer;
    const at = this.answer.checkpoints.findIndex((c) => c.messageId === messageId);
    const parts: HTMLElement[] = [];
    const idle = this.writable && !this.running && !this.busy;
    if (revert?.messageId === messageId) {
      parts.push(
        h("span", { class: "badge" }, `reverted ${plural(revert.files.length, "file")}`),
        h("button", { type: "button", testid: "unrevert", class: "link", disabled: !idle, title: "Put the files and the history back as they were before the revert", onclick: () => void this.act(() => this.api.post(this.path("unrevert"))) }, "Unrevert"),
      );
    } else if (this.reverted.has(messageId)) {
      parts.push(h("span", { class: "badge" }, "reverted"));
    }
    if (at >= 0 && !this.reverted.has(messageId)) {
      parts.push(h("button", { type: "button", testid: "revert-open", class: "link", disabled: !idle, "aria-expanded": this.confirming === messageId ? "true" : "false", onclick: () => this.toggle(messageId) }, "Revert"));
    }
    if (!this.reverted.has(messageId) && this.writable) {
      parts.push(h("button", { type: "button", testid: "fork", class: "link", disabled: this.busy, title: "A new session with the history up to and including this turn", onclick: () => void this.fork(messageId) }, "Fork"));
    }
    if (parts.length === 0) return null;
    const panel = at >= 0 && this.confirming === messageId ? this.confirmPanel(messageId, at, idle) : null;
    return h("div", { testid: "message-actions", class: "msg-actions" }, ...parts, panel);
  }

  /** The files the revert will put back: the turn's and every later turn's, each once (as the earliest turn changed it). */
  private confirmPanel(messageId: string, at: number, idle: boolean): HTMLElement {
    const files = new Map<string, FileChange>();
    for (const checkpoint of this.answer.checkpoints.slice(at)) for (const file of checkpoint.files) if (!files.has(file.path)) files.set(file.path, file.change);
    const later = this.answer.checkpoints.length - at - 1;
    return h(
      "div",
      { testid: "revert-panel", class: "revert-panel" },
      h("div", null, `Put back ${plural(files.size, "file")} as they were before this message${later > 0 ? ` (this turn and ${plural(later, "later turn")})` : ""}; the turns from here on leave the model's history.`),
      h("ul", { class: "revert-files" }, [...files].map(([path, change]) => h("li", { testid: "revert-file", "data-change": change }, h("span", { class: `change ${change}` }, undoneAs(change)), " ", h("code", null, path)))),
      h(
        "div",
        { class: "revert-buttons" },
        h("button", { type: "button", testid: "revert-confirm", class: "danger", disabled: !idle, onclick: () => void this.act(() => this.api.post(this.path("revert"), { messageId })) }, `Revert ${plural(files.size, "file")}`),
        h("button", { type: "button", onclick: () => this.toggle(messageId) }, "Cancel"),
      ),
    );
  }

  private toggle(messageId: string): void {
    this.confirming = this.confirming === messageId ? null : messageId;
    this.version++;
    this.onChange();
  }

  private async act(request: () => Promise<unknown>): Promise<void> {
    this.setBusy(true);
    try {
      await request();
      this.confirming = null;
    } catch (error) {
      this.say((error as Error).message);
    } finally {
      this.setBusy(false);
    }
    await this.refresh();
  }

  private async fork(messageId: string): Promise<void> {
    this.setBusy(true);
    try {
      const row = await this.api.post<SessionRow>(this.path("fork"), { messageId });
      this.onForked(row);
    } catch (error) {
      this.say(`Not forked: ${(error as Error).message}`);
    } finally {
      this.setBusy(false);
    }
  }

  private setBusy(busy: boolean): void {
    this.busy = busy;
    this.version++;
    this.onChange();
  }

  private path(action: string): string {
    return `/sessions/${encodeURIComponent(this.sessionId ?? "")}/${action}`;
  }
}

/** What a revert does to a file the turns changed. */
function undoneAs(change: FileChange): string {
  return change === "added" ? "remove" : change === "deleted" ? "recreate" : "restore";
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/**
 * The chat of one session as a list of items, built from server events (live, or
 * replayed from the event log) or from stored message rows. Applying the same event
 * twice changes nothing, so a replay after a reconnect cannot duplicate anything.
 * No DOM here: the view renders the items that changed.
 */
import type { ServerEvent } from "./stream.js";

export interface MessageItem {
  kind: "message";
  role: "user" | "assistant";
  id: string | null;
  text: string;
  thinking: string;
  streaming: boolean;
  /** data: URLs of images sent with the message. */
  images: string[];
  /** Where a user message came from when not typed (wakeup, agent…). */
  source: string | null;
  compacted: boolean;
}

export type ToolState = "running" | "done" | "error";

export interface ToolItem {
  kind: "tool";
  toolCallId: string;
  name: string;
  input: unknown;
  output: string;
  state: ToolState;
  durationMs?: number;
  elapsedMs?: number;
  /** Set once tool.end (or the stored result) arrived; later chunks are ignored. */
  ended: boolean;
  images: string[];
  /** Loaded from history: shown collapsed. */
  fromHistory: boolean;
}

export interface NoticeItem {
  kind: "notice";
  key: string;
  tone: "info" | "error";
  text: string;
  detail?: string;
}

export type Item = MessageItem | ToolItem | NoticeItem;

/** A stored message row (GET /sessions/:id/messages). */
export interface MessageRow {
  id: string;
  seq: number;
  role: "system" | "user" | "assistant" | "tool";
  content: unknown;
  thinking?: string | null;
  tool_calls?: { id: string; name: string; arguments: string }[] | null;
  tool_call_id?: string | null;
  meta?: Record<string, unknown> | null;
  kind?: string;
  compacted?: boolean;
}

const QUIET_STOPS = new Set(["stop", "tool_calls", "end_turn", ""]);

export class Timeline {
  readonly items: Item[] = [];
  /** Items added or changed since the last takeChanges(). */
  private changed = new Set<Item>();
  private removed: Item[] = [];
  private readonly messages = new Map<string, MessageItem>();
  private readonly tools = new Map<string, ToolItem>();
  private readonly notices = new Set<string>();
  private readonly doneRuns = new Set<string>();
  private streaming: MessageItem | null = null;
  /** Text streamed before a tool call: the assistant chat.message that follows is this bubble, not a new one. */
  private unclaimed: MessageItem | null = null;
  /** Highest per-session seq applied (event-log mode dedupes on it). */
  lastSeq = 0;
  /** Sum of the runs' `cost_usd` seen in chat.done events (undefined until one carries it). */
  costUsd: number | undefined;

  takeChanges(): { changed: Item[]; removed: Item[] } {
    const out = { changed: [...this.changed], removed: this.removed };
    this.changed = new Set();
    this.removed = [];
    return out;
  }

  apply(event: ServerEvent, fromHistory = false): void {
    if (typeof event.seq === "number" && event.seq > this.lastSeq) this.lastSeq = event.seq;
    switch (event.type) {
      case "chat.message":
        return this.chatMessage(event, fromHistory);
      case "chat.chunk":
        return this.stream((item) => (item.text += String(event.content ?? "")));
      case "thinking.chunk":
        return this.stream((item) => (item.thinking += String(event.content ?? "")));
      case "inference.tool":
        return void this.tool(String(event.toolCallId), String(event.name ?? "tool"), fromHistory);
      case "tool.start": {
        const tool = this.tool(String(event.toolCallId), String(event.toolName), fromHistory);
        tool.input = event.toolInput;
        return this.touch(tool);
      }
      case "tool.chunk": {
        const tool = this.tool(String(event.toolCallId), String(event.toolName), fromHistory);
        if (tool.ended) return;
        tool.output += String(event.chunk ?? "");
        return this.touch(tool);
      }
      case "tool.progress": {
        const tool = this.tools.get(String(event.toolCallId ?? event.toolUseId));
        if (!tool || tool.ended) return;
        // tool.progress carries elapsed seconds.
        tool.elapsedMs = Number(event.elapsed) * 1000;
        return this.touch(tool);
      }
      case "tool.end": {
        const tool = this.tool(String(event.toolCallId), String(event.toolName), fromHistory);
        tool.input = event.toolInput ?? tool.input;
        tool.output = typeof event.output === "string" ? event.output : tool.output;
        tool.state = event.success === false ? "error" : "done";
        tool.durationMs = typeof event.durationMs === "number" ? event.durationMs : undefined;
        tool.ended = true;
        tool.images = imagesOf(event.attachments ?? (event.details as { attachments?: unknown } | undefined)?.attachments);
        return this.touch(tool);
      }
      case "chat.done":
        return this.done(event);
      case "session.compacted": {
        const key = `compacted-${event.seq ?? event.summaryMessageId ?? this.items.length}`;
        return this.notice(key, "info", `Context compacted (${String(event.reason ?? "manual")}): ${Number(event.tokensBefore ?? 0).toLocaleString()} → ${Number(event.tokensAfter ?? 0).toLocaleString()} tokens`);
      }
      default:
        return;
    }
  }

  /** Stored rows, oldest first (the fallback history while the event log is not available). */
  loadMessages(rows: MessageRow[]): void {
    for (const row of rows) {
      if (row.kind === "summary") {
        this.notice(`summary-${row.id}`, "info", "Earlier conversation summarised", textOf(row.content));
        continue;
      }
      if (row.role === "system") continue;
      this.chatMessage(
        {
          type: "chat.message",
          role: row.role,
          id: row.id,
          content: row.content,
          thinking_content: row.thinking ?? null,
          tool_calls: row.tool_calls ?? undefined,
          tool_call_id: row.tool_call_id ?? undefined,
          source: row.meta?.source,
          compacted: row.compacted === true,
        },
        true,
      );
    }
    this.finishStreaming();
  }

  private chatMessage(event: ServerEvent, fromHistory: boolean): void {
    const id = String(event.id ?? "");
    if (event.role === "tool") {
      const tool = this.tools.get(String(event.tool_call_id));
      if (!tool || tool.ended) return;
      tool.output = textOf(event.content);
      tool.state = /^Error\b/.test(tool.output) ? "error" : "done";
      tool.ended = true;
      return this.touch(tool);
    }
    const existing = id ? this.messages.get(id) : undefined;
    if (existing) {
      // Already shown (replay after reconnect): drop a streaming copy of the same text.
      for (const copy of [this.streaming, this.unclaimed]) if (copy && copy !== existing && copy.id === null) this.remove(copy);
      this.streaming = this.unclaimed = null;
      return;
    }
    if (event.role === "user") {
      this.unclaimed = null;
      const source = typeof event.source === "string" ? event.source : typeof (event.meta as { source?: unknown })?.source === "string" ? String((event.meta as { source: string }).source) : null;
      const item: MessageItem = { kind: "message", role: "user", id, text: textOf(event.content), thinking: "", streaming: false, images: imagesOf(event.content), source: source === "http" || source === "user" ? null : source, compacted: event.compacted === true };
      this.messages.set(id, item);
      return this.add(item);
    }
    if (event.role !== "assistant") return;
    const item = this.streaming ?? this.unclaimed ?? this.newAssistant();
    this.streaming = null;
    this.unclaimed = null;
    item.id = id;
    if (typeof event.content === "string" && event.content !== "") item.text = event.content;
    if (typeof event.thinking_content === "string" && event.thinking_content !== "") item.thinking = event.thinking_content;
    item.streaming = false;
    item.compacted = event.compacted === true;
    this.messages.set(id, item);
    this.touch(item);
    for (const call of (event.tool_calls as { id: string; name: string; arguments: string }[] | undefined) ?? []) {
      const tool = this.tool(call.id, call.name, fromHistory);
      if (tool.input === undefined) tool.input = parseJson(call.arguments);
      this.touch(tool);
    }
  }

  private done(event: ServerEvent): void {
    const key = `done-${event.seq ?? event.messageId ?? this.items.length}`;
    // A replayed chat.done must not count its cost twice.
    if (this.doneRuns.has(key)) return;
    this.doneRuns.add(key);
    if (typeof event.cost_usd === "number") this.costUsd = (this.costUsd ?? 0) + event.cost_usd;
    this.finishStreaming();
    for (const tool of this.tools.values()) {
      if (tool.ended) continue;
      tool.state = "error";
      tool.ended = true;
      if (!tool.output) tool.output = "(interrupted)";
      this.touch(tool);
    }
    const error = event.error as { code?: string; message?: string } | undefined;
    const stop = String(event.stopReason ?? event.finishReason ?? "");
    if (error) this.notice(key, "error", `${error.code ?? "ERROR"}: ${error.message ?? "the run failed"}`);
    else if (stop === "cancelled") this.notice(key, "info", "Run cancelled");
    else if (stop === "suspended") this.notice(key, "info", "Session suspended");
    else if (!QUIET_STOPS.has(stop)) this.notice(key, "info", `Run stopped: ${stop}`);
  }

  /** Ends the streaming bubble; before a tool call it stays claimable by the chat.message that follows. */
  private finishStreaming(claimable = false): void {
    this.unclaimed = claimable && this.streaming?.id === null ? this.streaming : null;
    if (!this.streaming) return;
    this.streaming.streaming = false;
    this.touch(this.streaming);
    this.streaming = null;
  }

  private stream(update: (item: MessageItem) => void): void {
    const item = this.streaming ?? (this.streaming = this.newAssistant());
    update(item);
    this.touch(item);
  }

  private newAssistant(): MessageItem {
    const item: MessageItem = { kind: "message", role: "assistant", id: null, text: "", thinking: "", streaming: true, images: [], source: null, compacted: false };
    this.add(item);
    return item;
  }

  private tool(toolCallId: string, name: string, fromHistory: boolean): ToolItem {
    let tool = this.tools.get(toolCallId);
    if (!tool) {
      // A tool call ends the text streamed before it; text after it is a new bubble.
      if (this.streaming) this.finishStreaming(true);
      tool = { kind: "tool", toolCallId, name, input: undefined, output: "", state: "running", ended: false, images: [], fromHistory };
      this.tools.set(toolCallId, tool);
      this.add(tool);
    }
    return tool;
  }

  private notice(key: string, tone: NoticeItem["tone"], text: string, detail?: string): void {
    if (this.notices.has(key)) return;
    this.notices.add(key);
    this.add({ kind: "notice", key, tone, text, detail });
  }

  private add(item: Item): void {
    this.items.push(item);
    this.changed.add(item);
  }

  private touch(item: Item): void {
    this.changed.add(item);
  }

  private remove(item: Item): void {
    const index = this.items.indexOf(item);
    if (index >= 0) this.items.splice(index, 1);
    this.changed.delete(item);
    this.removed.push(item);
  }
}

/** Text of a message content: a string, or OpenAI content parts. */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && typeof part === "object" && (part as { type?: string }).type === "text" ? String((part as { text?: unknown }).text ?? "") : ""))
      .filter(Boolean)
      .join("\n");
  }
  return content === null || content === undefined ? "" : JSON.stringify(content);
}

/** data: image URLs from content parts (`image_url`) or tool attachments (`{ type: "image", media_type, data }`). */
export function imagesOf(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  const out: string[] = [];
  for (const part of value) {
    if (!part || typeof part !== "object") continue;
    const p = part as { type?: string; image_url?: { url?: string } | string; media_type?: string; data?: string; url?: string };
    const url = p.type === "image_url" ? (typeof p.image_url === "string" ? p.image_url : p.image_url?.url) : p.type === "image" ? (p.data ? `data:${p.media_type ?? "image/png"};base64,${p.data}` : p.url) : undefined;
    if (url && /^data:image\/(png|jpe?g|gif|webp);base64,/i.test(url)) out.push(url);
  }
  return out;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

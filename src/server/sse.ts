import type { EventBus, EventFilter, VeilEvent } from "../base/events.js";
import { eventWire } from "../base/event-wire.js";
import { REPLAY_PAGE, type EventLog } from "../core/event-log.js";
import { VeilError } from "../errors.js";
import { scheduleFlush } from "./sse-batch.js";
import { orderedGate, type SessionAdmit } from "./sse-gate.js";

/** Proxies drop idle streams: at least one keepalive every 15 s keeps them open. */
export const HEARTBEAT_MS = 15_000;
/** Bytes a client may fall behind before it is dropped (it reconnects and replays). */
export const MAX_BUFFERED_BYTES = 1024 * 1024;

export interface SseOptions {
  bus: EventBus;
  /** Replay source for Last-Event-ID (the durable event log). */
  log?: Pick<EventLog, "replay">;
  filter: EventFilter;
  /** Which sequence number is the SSE id: per-session `seq` or store-wide `gseq`. */
  idField: "seq" | "gseq";
  /** From the Last-Event-ID header (or ?lastEventId=), to replay what was missed. */
  lastEventId?: number;
  heartbeatMs?: number;
  maxBufferedBytes?: number;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  /** Events that go first, before replay and live events (e.g. pending remote methods). */
  initial?: () => { id?: number; data: unknown }[];
  /** The stream ends after sending the event for which this returns true. */
  endAfter?: (event: VeilEvent) => boolean;
  /** The stream ends when this settles (after flushing what was published before). */
  until?: Promise<unknown>;
  /**
   * Something that can end the stream early (its key revoked): called with a function that
   * ends it (after a comment line saying why); returns the function that stops the watch.
   */
  endWhen?: (end: (why: string) => void) => () => void;
  /** Comment line sent on connect. */
  hello?: string;
  /** Only the events of the sessions this admits go out (a key's own sessions); absent: every matching event. */
  admit?: SessionAdmit;
  /** Told when the stream opens and when it closes (the SSE clients gauge). */
  clients?: { sseOpened(): void; sseClosed(): void } | null;
}

const encoder = new TextEncoder();
/** Encoded frames per event and id field: serialised and encoded once for every client. */
const frames = { seq: new WeakMap<VeilEvent, Uint8Array>(), gseq: new WeakMap<VeilEvent, Uint8Array>() };

export function formatSse(data: unknown, id?: number): string {
  const json = typeof data === "string" ? data : JSON.stringify(data);
  return `${id !== undefined ? `id: ${id}\n` : ""}data: ${json}\n\n`;
}

function eventFrame(event: VeilEvent, idField: "seq" | "gseq"): Uint8Array {
  const cache = frames[idField];
  let frame = cache.get(event);
  if (!frame) {
    frame = encoder.encode(formatSse(eventWire(event), event[idField]));
    cache.set(event, frame);
  }
  return frame;
}

/**
 * A text/event-stream Response fed by the bus, with replay from the event log. A slow
 * client never stalls the publisher: past maxBufferedBytes unread it is dropped and can
 * reconnect with Last-Event-ID. Live events that arrive during a replay are held and sent
 * after it, skipping those the replay already carried.
 */
export function sseResponse(options: SseOptions): Response {
  let unsubscribe = () => {};
  let unwatch = () => {};
  let heartbeat: NodeJS.Timeout | undefined;
  let closed = false;
  let wakeReplay: (() => void) | null = null;
  const maxBytes = options.maxBufferedBytes ?? MAX_BUFFERED_BYTES;
  // Frames not yet handed to the stream (see sse-batch.ts); they count as unread.
  const pending: Uint8Array[] = [];
  let pendingBytes = 0;

  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const batched = {
          flush() {
            if (closed || pending.length === 0) return;
            const chunk = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
            pending.length = 0;
            pendingBytes = 0;
            controller.enqueue(chunk);
          },
        };
        const close = () => {
          if (closed) return;
          batched.flush();
          closed = true;
          options.clients?.sseClosed();
          unsubscribe();
          unwatch();
          clearInterval(heartbeat);
          wakeReplay?.();
          options.signal.removeEventListener("abort", close);
          try {
            controller.close();
          } catch {
            // already closed by the consumer
          }
        };
        /** Live frames wait for the next window; `force` (hello, initial, replay) goes at once and is never dropped. */
        const push = (bytes: Uint8Array, force = false) => {
          if (closed) return;
          if (!force && (controller.desiredSize ?? 1) - pendingBytes <= 0) return close();
          pending.push(bytes);
          pendingBytes += bytes.length;
          if (force) batched.flush();
          else scheduleFlush(batched);
        };
        let lastId = options.lastEventId ?? 0;
        let held: VeilEvent[] | null = options.lastEventId !== undefined && options.log ? [] : null;
        const sendLive = (event: VeilEvent) => {
          const id = event[options.idField];
          if (id !== undefined) {
            if (id <= lastId) return;
            lastId = id;
          }
          push(eventFrame(event, options.idField));
          if (options.endAfter?.(event)) close();
        };
        const deliver = options.admit ? orderedGate(options.admit, sendLive) : sendLive;

        options.clients?.sseOpened();
        push(encoder.encode(`: ${options.hello ?? "connected"}\n\n`), true);
        for (const item of options.initial?.() ?? []) push(encoder.encode(formatSse(item.data, item.id)), true);
        unsubscribe = options.bus.subscribe(options.filter, (event) => (held ? held.push(event) : deliver(event)));
        heartbeat = setInterval(() => push(encoder.encode(": keepalive\n\n")), options.heartbeatMs ?? HEARTBEAT_MS);
        heartbeat.unref?.();
        options.signal.addEventListener("abort", close, { once: true });
        options.until?.then(close, close);
        if (options.endWhen && !closed) {
          unwatch = options.endWhen((why) => {
            push(encoder.encode(`: ${why}\n\n`), true);
            close();
          });
        }

        if (held && options.log) {
          const log = options.log;
          void (async () => {
            try {
              const pages = new ReplayPages();
              for (;;) {
                const page = await log.replay(options.filter, lastId, pages.size);
                if (closed || page.length === 0) break;
                // One chunk per page: encoding and queueing cost per page, not per event.
                let text = "";
                for (const event of page) {
                  lastId = event.id;
                  if (event.wire && (!options.admit || (await options.admit(event.sessionId)))) text += formatSse(event.wire, event.id);
                }
                pages.sawPage(page.length, text.length);
                if (text) push(encoder.encode(text), true);
                // Replay respects the reader's pace instead of dropping it.
                while (!closed && (controller.desiredSize ?? 1) <= 0) await new Promise<void>((r) => (wakeReplay = r));
              }
            } catch {
              push(encoder.encode(": replay-unavailable (the event log could not be read)\n\n"), true);
            }
            const pending = held ?? [];
            held = null;
            for (const event of pending) deliver(event);
          })();
        }
      },
      pull() {
        const wake = wakeReplay;
        wakeReplay = null;
        wake?.();
      },
      cancel() {
        if (!closed) options.clients?.sseClosed();
        closed = true;
        pending.length = 0;
        unsubscribe();
        unwatch();
        clearInterval(heartbeat);
        wakeReplay?.();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: maxBytes }),
  );

  return new Response(stream, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    },
  });
}

/** Replay aims at pages of about this many chars: a session's stored events can be of any size (a tool.end can carry 256 KB). */
export const REPLAY_PAGE_CHARS = 1024 * 1024;
const FIRST_REPLAY_PAGE = 4;

/**
 * How many events the next replay page asks for: a few at first, then as many as the pages
 * so far say fit in REPLAY_PAGE_CHARS (at least one, at most the event log's page), so one
 * page of big events cannot hold a thousand of them at once.
 */
export class ReplayPages {
  size = FIRST_REPLAY_PAGE;

  sawPage(events: number, chars: number): void {
    const perEvent = Math.max(1, chars / Math.max(1, events));
    this.size = Math.max(1, Math.min(REPLAY_PAGE, 8 * this.size, Math.floor(REPLAY_PAGE_CHARS / perEvent)));
  }
}

/** A sequence number from a header or query: absent → undefined; not a non-negative integer → 400. */
export function parseSequence(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n)) {
    throw new VeilError("VALIDATION_ERROR", `${name} must be a non-negative integer (got ${JSON.stringify(raw.slice(0, 40))})`);
  }
  return n;
}

export function parseLastEventId(header: string | undefined, query: string | undefined): number | undefined {
  return header !== undefined && header !== "" ? parseSequence(header, "Last-Event-ID") : parseSequence(query, "lastEventId");
}

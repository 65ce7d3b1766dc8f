import type { EventBus, EventFilter, VeilEvent } from "../base/events.js";

/** Proxies drop idle streams; CONTRACT §6 asks for at least one keepalive every 15 s. */
export const HEARTBEAT_MS = 15_000;
/** Events a client may fall behind before it is dropped (it reconnects and replays). */
export const MAX_QUEUED_EVENTS = 1000;

export interface SseOptions {
  bus: EventBus;
  filter: EventFilter;
  /** Which sequence number is the SSE id: per-session `seq` or global `gseq`. */
  idField: "seq" | "gseq";
  /** From the Last-Event-ID header (or ?lastEventId=), to replay what was missed. */
  lastEventId?: number;
  heartbeatMs?: number;
  maxQueued?: number;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  /** Events that go first, before replay and live events (e.g. pending remote methods). */
  initial?: () => { id?: number; data: unknown }[];
  /** The stream ends after sending the event for which this returns true. */
  endAfter?: (event: VeilEvent) => boolean;
  /** The stream ends when this settles (after flushing what was published before). */
  until?: Promise<unknown>;
  /** Comment line sent on connect. */
  hello?: string;
}

const encoder = new TextEncoder();

export function formatSse(data: unknown, id?: number): string {
  const json = JSON.stringify(data);
  return `${id !== undefined ? `id: ${id}\n` : ""}data: ${json}\n\n`;
}

/**
 * A text/event-stream Response fed by the bus. A slow client never stalls the
 * publisher: when its queue passes maxQueued it is dropped and can reconnect
 * with Last-Event-ID to replay from the bus's bounded buffer.
 */
export function sseResponse(options: SseOptions): Response {
  let unsubscribe = () => {};
  let heartbeat: NodeJS.Timeout | undefined;
  let closed = false;
  const maxQueued = options.maxQueued ?? MAX_QUEUED_EVENTS;

  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const close = () => {
          if (closed) return;
          closed = true;
          unsubscribe();
          clearInterval(heartbeat);
          options.signal.removeEventListener("abort", close);
          try {
            controller.close();
          } catch {
            // already closed by the consumer
          }
        };
        const send = (text: string) => {
          if (closed) return;
          if ((controller.desiredSize ?? 1) <= 0) return close();
          controller.enqueue(encoder.encode(text));
        };
        const sendEvent = (event: VeilEvent) => {
          send(formatSse(event, event[options.idField]));
          if (options.endAfter?.(event)) close();
        };

        send(`: ${options.hello ?? "connected"}\n\n`);
        for (const item of options.initial?.() ?? []) send(formatSse(item.data, item.id));
        if (options.lastEventId !== undefined) {
          const missed = options.bus.replay(options.filter, options.lastEventId);
          if (missed === null) send(": replay-unavailable (events older than the buffer were dropped)\n\n");
          else for (const event of missed) sendEvent(event);
        }
        // Replay and subscribe happen in the same tick, so no event falls between them.
        unsubscribe = options.bus.subscribe(options.filter, sendEvent);
        heartbeat = setInterval(() => send(": keepalive\n\n"), options.heartbeatMs ?? HEARTBEAT_MS);
        heartbeat.unref?.();
        options.signal.addEventListener("abort", close, { once: true });
        options.until?.then(close, close);
      },
      cancel() {
        closed = true;
        unsubscribe();
        clearInterval(heartbeat);
      },
    },
    new CountQueuingStrategy({ highWaterMark: maxQueued }),
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

export function parseLastEventId(header: string | undefined, query: string | undefined): number | undefined {
  const raw = header ?? query;
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

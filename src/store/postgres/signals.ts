import pg from "pg";
import type { Clock } from "../../base/clock.js";
import type { Logger } from "../../base/log.js";
import type { ClusterSignal, ControlAction, LiveDelta, SignalSubscription, SubscribeOptions } from "../cluster.js";
import { redactUrl, type RetryPolicy } from "./connection.js";
import { CHANNELS } from "./sql.js";

/** Parses one notification; undefined for a payload this build does not understand. */
export function parseSignal(channel: string, payload: string | undefined): ClusterSignal | undefined {
  const text = payload ?? "";
  try {
    switch (channel) {
      case CHANNELS.inbox:
        return text ? { kind: "inbox", sessionId: text } : undefined;
      case CHANNELS.events: {
        const gseq = Number(text);
        return Number.isFinite(gseq) && gseq > 0 ? { kind: "events", gseq } : undefined;
      }
      case CHANNELS.control: {
        const body = JSON.parse(text) as { sessionId?: unknown; action?: unknown; data?: unknown };
        if (typeof body.sessionId !== "string" || !isControlAction(body.action)) return undefined;
        const data = body.data && typeof body.data === "object" ? (body.data as Record<string, unknown>) : undefined;
        return { kind: "control", sessionId: body.sessionId, action: body.action, ...(data ? { data } : {}) };
      }
      case CHANNELS.deltas: {
        const body = JSON.parse(text) as { n?: unknown; d?: unknown };
        if (typeof body.n !== "string" || !Array.isArray(body.d)) return undefined;
        return { kind: "deltas", nodeId: body.n, deltas: body.d as LiveDelta[] };
      }
      case CHANNELS.remoteResult: {
        const body = JSON.parse(text) as { id?: unknown; nodeId?: unknown };
        return typeof body.id === "string" && typeof body.nodeId === "string" ? { kind: "remote-result", id: body.id, nodeId: body.nodeId } : undefined;
      }
      default:
        return undefined;
    }
  } catch {
    return undefined;
  }
}

const CONTROL_ACTIONS: ReadonlySet<string> = new Set<ControlAction>(["cancel", "suspend", "resume", "close", "compact", "revert", "unrevert", "fork"]);

function isControlAction(value: unknown): value is ControlAction {
  return typeof value === "string" && CONTROL_ACTIONS.has(value);
}

/** PostgreSQL refuses a NOTIFY payload of 8000 bytes or more; this leaves room for the envelope. */
const DELTA_PAYLOAD_BYTES = 7000;

/**
 * The payloads of `deltas`, in order, each under the NOTIFY limit. A delta too large for one
 * notification is cut into several of the same type, its text in consecutive pieces.
 */
export function deltaPayloads(nodeId: string, deltas: readonly LiveDelta[]): string[] {
  const payloads: string[] = [];
  let batch: LiveDelta[] = [];
  let bytes = 0;
  const close = () => {
    // `s` keeps two payloads with the same deltas apart (a transaction folds identical notifications into one).
    if (batch.length) payloads.push(JSON.stringify({ n: nodeId, s: payloads.length, d: batch }));
    batch = [];
    bytes = 0;
  };
  for (const delta of deltas.flatMap(splitDelta)) {
    const size = Buffer.byteLength(JSON.stringify(delta));
    if (bytes + size > DELTA_PAYLOAD_BYTES) close();
    batch.push(delta);
    bytes += size;
  }
  close();
  return payloads;
}

/** Pieces of at most this many characters (4 bytes each at worst in UTF-8, 6 when escaped in JSON). */
const PIECE_CHARS = Math.floor(DELTA_PAYLOAD_BYTES / 8);

function splitDelta(delta: LiveDelta): LiveDelta[] {
  const body = delta.body as { content?: unknown; chunk?: unknown };
  const field = typeof body.content === "string" ? "content" : typeof body.chunk === "string" ? "chunk" : null;
  if (!field || Buffer.byteLength(JSON.stringify(delta)) <= DELTA_PAYLOAD_BYTES) return [delta];
  const text = [...(body[field] as string)];
  const pieces: LiveDelta[] = [];
  for (let i = 0; i < text.length; i += PIECE_CHARS) pieces.push({ ...delta, body: { ...delta.body, [field]: text.slice(i, i + PIECE_CHARS).join("") } as LiveDelta["body"] });
  return pieces;
}

export function controlPayload(sessionId: string, action: ControlAction, data?: Record<string, unknown>): string {
  return JSON.stringify({ sessionId, action, ...(data ? { data } : {}) });
}

export interface ListenerDeps {
  url: string;
  clock: Clock;
  retry: RetryPolicy;
  log?: Logger;
}

/**
 * One dedicated connection (outside the pool: a LISTEN must stay on its session) that
 * listens on every channel. When the connection drops it reconnects with backoff, without
 * giving up, and calls `onReconnect` so the caller re-reads what it may have missed.
 */
export async function listenForSignals(deps: ListenerDeps, onSignal: (signal: ClusterSignal) => void, options: SubscribeOptions = {}): Promise<SignalSubscription> {
  let client: pg.Client | undefined;
  let closed = false;
  let attempt = 0;
  // A function, so the compiler does not narrow `closed` across the awaits above its uses.
  const isClosed = () => closed;

  const connect = async (): Promise<pg.Client> => {
    const next = new pg.Client({ connectionString: deps.url, application_name: "veil-listener" });
    next.on("notification", (message) => {
      const signal = parseSignal(message.channel, message.payload);
      if (signal) onSignal(signal);
    });
    next.on("error", (error) => deps.log?.warn("PostgreSQL listener connection lost", { url: redactUrl(deps.url), error: error.message }));
    next.on("end", () => {
      if (client === next && !closed) void reconnect();
    });
    await next.connect();
    try {
      for (const channel of Object.values(CHANNELS)) await next.query(`LISTEN ${channel}`);
    } catch (error) {
      await next.end().catch(() => undefined);
      throw error;
    }
    client = next;
    return next;
  };

  const reconnect = async (): Promise<void> => {
    client = undefined;
    while (!closed) {
      const delay = Math.min(deps.retry.maxDelayMs, deps.retry.baseDelayMs * 2 ** Math.min(attempt++, 16));
      await deps.clock.sleep(delay);
      if (closed) return;
      try {
        const fresh = await connect();
        attempt = 0;
        if (isClosed()) {
          await fresh.end().catch(() => undefined);
          return;
        }
        options.onReconnect?.();
        return;
      } catch (error) {
        options.onError?.(error as Error);
      }
    }
  };

  await connect();
  return {
    async close() {
      if (closed) return;
      closed = true;
      const current = client;
      client = undefined;
      await current?.end().catch(() => undefined);
    },
  };
}

import type { EventBus, EventFilter, VeilEvent, VeilEventBody } from "../base/events.js";
import type { Clock } from "../base/clock.js";
import { systemClock } from "../base/clock.js";

interface Subscriber {
  filter: EventFilter;
  handler: (event: VeilEvent) => void;
}

/** Default replay depth: enough for a reconnect after a network blip, bounded in memory. */
export const DEFAULT_REPLAY_EVENTS = 2000;
/** Per-session replay rings kept at once; the least recently active are dropped first. */
export const DEFAULT_REPLAY_SESSIONS = 500;

/**
 * In-process event bus. Keeps a bounded ring of recent events for Last-Event-ID
 * replay: globally, and per session so a chatty session cannot push a quiet
 * one's history out.
 */
export class InProcessEventBus implements EventBus {
  private readonly subscribers = new Set<Subscriber>();
  private readonly global: VeilEvent[] = [];
  /** Sequence counters outlive replay rings, so a session's seq never restarts. */
  private readonly seqs = new Map<string, number>();
  /** Replay rings in least-recently-published order (Map keeps insertion order). */
  private readonly rings = new Map<string, VeilEvent[]>();
  private gseq = 0;

  constructor(
    private readonly options: {
      replayEvents?: number;
      perSessionReplay?: number;
      replaySessions?: number;
      clock?: Clock;
      onHandlerError?: (error: unknown) => void;
    } = {},
  ) {}

  publish(sessionId: string, body: VeilEventBody): VeilEvent {
    const seq = (this.seqs.get(sessionId) ?? 0) + 1;
    this.seqs.set(sessionId, seq);
    const event = { ...body, sessionId, seq, gseq: ++this.gseq, ts: (this.options.clock ?? systemClock).now() } as VeilEvent;
    pushBounded(this.global, event, this.options.replayEvents ?? DEFAULT_REPLAY_EVENTS);
    let ring = this.rings.get(sessionId);
    if (ring) this.rings.delete(sessionId);
    else ring = [];
    this.rings.set(sessionId, ring);
    pushBounded(ring, event, this.options.perSessionReplay ?? DEFAULT_REPLAY_EVENTS);
    if (this.rings.size > (this.options.replaySessions ?? DEFAULT_REPLAY_SESSIONS)) this.rings.delete(this.rings.keys().next().value!);
    for (const sub of this.subscribers) {
      if (!matches(sub.filter, event)) continue;
      try {
        sub.handler(event);
      } catch (error) {
        this.options.onHandlerError?.(error);
      }
    }
    return event;
  }

  subscribe(filter: EventFilter, handler: (event: VeilEvent) => void): () => void {
    const sub = { filter, handler };
    this.subscribers.add(sub);
    return () => void this.subscribers.delete(sub);
  }

  replay(filter: EventFilter, after: number): VeilEvent[] | null {
    if (filter.sessionId !== undefined) {
      const last = this.seqs.get(filter.sessionId) ?? 0;
      const ring = this.rings.get(filter.sessionId) ?? [];
      return sliceAfter(ring, after, (e) => e.seq, last)?.filter((e) => matches(filter, e)) ?? null;
    }
    return sliceAfter(this.global, after, (e) => e.gseq, this.gseq)?.filter((e) => matches(filter, e)) ?? null;
  }

  /** Drops a session's replay ring (its sequence counter stays). */
  forgetSession(sessionId: string): void {
    this.rings.delete(sessionId);
  }
}

function matches(filter: EventFilter, event: VeilEvent): boolean {
  if (filter.sessionId !== undefined && event.sessionId !== filter.sessionId) return false;
  if (filter.types && !filter.types.includes(event.type)) return false;
  return true;
}

function pushBounded(list: VeilEvent[], event: VeilEvent, max: number): void {
  list.push(event);
  if (list.length > max) list.splice(0, list.length - max);
}

function sliceAfter(list: VeilEvent[], after: number, key: (e: VeilEvent) => number, last: number): VeilEvent[] | null {
  if (after >= last) return [];
  const first = list[0];
  if (!first || key(first) > after + 1) return null;
  // Sequence numbers are dense in the ring, so the index is arithmetic.
  return list.slice(after + 1 - key(first));
}

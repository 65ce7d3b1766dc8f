import type { EventBus, EventFilter, VeilEvent, VeilEventBody } from "./events.js";
import type { Clock } from "./clock.js";
import { systemClock } from "./clock.js";

interface Subscriber {
  filter: EventFilter;
  handler: (event: VeilEvent) => void;
}

/** Default replay depth: enough for a reconnect after a network blip, bounded in memory. */
export const DEFAULT_REPLAY_EVENTS = 2000;

/**
 * In-process event bus. Keeps a bounded ring of recent events for Last-Event-ID
 * replay: globally, and per session so a chatty session cannot push a quiet
 * one's history out.
 */
export class InProcessEventBus implements EventBus {
  private readonly subscribers = new Set<Subscriber>();
  private readonly global: VeilEvent[] = [];
  private readonly perSession = new Map<string, { seq: number; events: VeilEvent[] }>();
  private gseq = 0;

  constructor(
    private readonly options: { replayEvents?: number; perSessionReplay?: number; clock?: Clock; onHandlerError?: (error: unknown) => void } = {},
  ) {}

  publish(sessionId: string, body: VeilEventBody): VeilEvent {
    let session = this.perSession.get(sessionId);
    if (!session) {
      session = { seq: 0, events: [] };
      this.perSession.set(sessionId, session);
    }
    const event = { ...body, sessionId, seq: ++session.seq, gseq: ++this.gseq, ts: (this.options.clock ?? systemClock).now() } as VeilEvent;
    pushBounded(this.global, event, this.options.replayEvents ?? DEFAULT_REPLAY_EVENTS);
    pushBounded(session.events, event, this.options.perSessionReplay ?? DEFAULT_REPLAY_EVENTS);
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
      const session = this.perSession.get(filter.sessionId);
      if (!session) return after <= 0 ? [] : null;
      return sliceAfter(session.events, after, (e) => e.seq, session.seq)?.filter((e) => matches(filter, e)) ?? null;
    }
    return sliceAfter(this.global, after, (e) => e.gseq, this.gseq)?.filter((e) => matches(filter, e)) ?? null;
  }

  /** Drops a closed session's replay ring. */
  forgetSession(sessionId: string): void {
    this.perSession.delete(sessionId);
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

import type { EventBus, EventFilter, EventSink, VeilEvent, VeilEventBody } from "../base/events.js";
import { LIVE_ONLY_EVENTS, matchesFilter } from "../base/events.js";
import { payloadJson, rememberWire, wireJson } from "../base/event-wire.js";
import type { Clock } from "../base/clock.js";
import type { Logger } from "../base/log.js";
import type { NewStoredEvent, Store, StoredEvent } from "../store/store.js";

interface Pending {
  sessionId: string;
  body: VeilEventBody;
  ts: number;
  settled?: boolean;
  resolve(event: VeilEvent): void;
}

/** A stored event ready for the wire. */
export interface ReplayedEvent {
  /** seq or gseq, whichever the stream uses as its id. */
  id: number;
  type: string;
  sessionId: string;
  wire: string;
}

export const REPLAY_PAGE = 1000;

/**
 * Writes one batch of rows and returns them stored, in order; a row it leaves null was
 * refused (its run lost the session to another writer) and is neither stored nor delivered.
 * By default the store's appendEvents; a cluster node fences its runs' rows (core/cluster).
 */
export type EventAppend = (rows: readonly NewStoredEvent[]) => Promise<(StoredEvent | null)[]>;

export interface EventLogDeps {
  store: Store;
  bus: EventBus;
  clock: Clock;
  log: Logger;
  /** How batches are written (default: store.appendEvents). */
  append?: EventAppend;
}

/**
 * The one way events leave the runtime: each event of a session gets its
 * next per-session `seq`, is stored (streaming deltas excepted), and only then is handed
 * to the bus. Events published in one tick are written in one transaction. `seq` comes
 * from the store the first time a session publishes in this process, so it never repeats
 * across restarts.
 */
export class EventLog implements EventSink {
  private queue: Pending[] = [];
  private running: Promise<void> | null = null;
  private readonly seqs = new Map<string, number>();
  private readonly append: EventAppend;

  constructor(private readonly deps: EventLogDeps) {
    this.append = deps.append ?? ((rows) => deps.store.appendEvents(rows));
  }

  get bus(): EventBus {
    return this.deps.bus;
  }

  publish(sessionId: string, body: VeilEventBody): Promise<VeilEvent> {
    return new Promise<VeilEvent>((resolve) => {
      this.queue.push({ sessionId, body, ts: this.deps.clock.now(), resolve });
      this.kick();
    });
  }

  /** Resolves when everything published so far is stored and delivered. */
  async flush(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Another writer may have published for the session (it changed hands): its next seq is read from the store again. */
  forgetSeq(sessionId: string): void {
    this.seqs.delete(sessionId);
  }

  /** Hands a row another process stored to the bus, as if published here. */
  deliverStored(row: StoredEvent): VeilEvent {
    const known = this.seqs.get(row.session_id);
    if (known !== undefined && known < row.seq) this.seqs.set(row.session_id, row.seq);
    const event = { ...(JSON.parse(row.data) as object), type: row.type, sessionId: row.session_id, seq: row.seq, gseq: row.gseq, ts: row.ts } as VeilEvent;
    rememberWire(event, wireJson({ type: row.type, sessionId: row.session_id, seq: row.seq, gseq: row.gseq, ts: row.ts }, row.data));
    this.deps.bus.deliver(event);
    return event;
  }

  /** Stored events after `after` (seq with a session filter, else gseq), one page. */
  async replay(filter: EventFilter, after: number, limit = REPLAY_PAGE): Promise<ReplayedEvent[]> {
    const rows =
      filter.sessionId !== undefined
        ? await this.deps.store.listEvents(filter.sessionId, { after, limit })
        : await this.deps.store.listEventsGlobal({ after, limit });
    const byId = filter.sessionId !== undefined ? (r: StoredEvent) => r.seq : (r: StoredEvent) => r.gseq;
    const out: ReplayedEvent[] = [];
    for (const row of rows) {
      if (!matchesFilter(filter, { sessionId: row.session_id, type: row.type })) continue;
      out.push({ id: byId(row), type: row.type, sessionId: row.session_id, wire: wireJson({ type: row.type, sessionId: row.session_id, seq: row.seq, gseq: row.gseq, ts: row.ts }, row.data) });
    }
    // A page cut short by the type filter still moves the cursor past what was read.
    if (rows.length > 0 && out.length === 0) out.push({ id: byId(rows.at(-1)!), type: "", sessionId: "", wire: "" });
    return out;
  }

  private kick(): void {
    if (this.running) return;
    this.running = this.drain().finally(() => {
      this.running = null;
      if (this.queue.length > 0) this.kick();
    });
  }

  private async drain(): Promise<void> {
    // Let the publishes of one step (its awaits resolve in microtasks) join one batch: one transaction.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0);
      try {
        await this.write(batch);
      } catch (error) {
        // Never leave a publisher waiting: what could not be written is still delivered live.
        this.deps.log.error("event delivery failed", { error: String(error), stack: (error as Error)?.stack });
        for (const p of batch) if (!p.settled) this.deliverLive(p);
      }
    }
  }

  private async write(batch: Pending[]): Promise<void> {
    const { store, bus, log } = this.deps;
    const stored = batch.filter((p) => !LIVE_ONLY_EVENTS.has(p.body.type));
    for (const sessionId of new Set(stored.map((p) => p.sessionId))) {
      if (!this.seqs.has(sessionId)) this.seqs.set(sessionId, await store.lastEventSeq(sessionId).catch(() => 0));
    }
    const rows = new Map<Pending, NewStoredEvent>();
    for (const p of stored) {
      const seq = this.seqs.get(p.sessionId)! + 1;
      this.seqs.set(p.sessionId, seq);
      rows.set(p, { session_id: p.sessionId, seq, type: p.body.type, ts: p.ts, data: payloadJson(p.body) });
    }
    const gseqs = new Map<Pending, number>();
    const refused = new Set<Pending>();
    if (rows.size > 0) {
      try {
        const written = await this.append([...rows.values()]);
        [...rows.keys()].forEach((p, i) => {
          const row = written[i];
          if (row) gseqs.set(p, row.gseq);
          else refused.add(p);
        });
      } catch (error) {
        // Delivery goes on so a live client still sees it; the gap is visible on replay.
        log.error("event log append failed", { error: String(error), events: rows.size });
      }
    }
    for (const p of batch) {
      const row = rows.get(p);
      const event = { ...p.body, sessionId: p.sessionId, ts: p.ts } as VeilEvent;
      if (row) {
        event.seq = row.seq;
        const gseq = gseqs.get(p);
        if (gseq !== undefined) event.gseq = gseq;
      }
      p.settled = true;
      if (refused.has(p)) {
        // A run that lost its lease: the new owner's events are the session's now.
        p.resolve(event);
        continue;
      }
      rememberWire(event, wireJson(event, row?.data ?? payloadJson(p.body)));
      bus.deliver(event);
      p.resolve(event);
    }
  }

  private deliverLive(p: Pending): void {
    const event = { ...p.body, sessionId: p.sessionId, ts: p.ts } as VeilEvent;
    p.settled = true;
    try {
      this.deps.bus.deliver(event);
    } finally {
      p.resolve(event);
    }
  }
}

import { systemClock, type Clock } from "../../base/clock.js";
import type { Logger } from "../../base/log.js";
import type { ClusterSignal, ClusterStore, ControlAction, Lease, LeaseInfo, LiveDelta, RemoteMethodRow, SignalSubscription, SubscribeOptions } from "../cluster.js";
import type { NewStoredEvent, Store, StoredEvent } from "../store.js";
import { checkDatabaseUrl, DEFAULT_RETRY, type RetryPolicy } from "./connection.js";
import { Database } from "./database.js";
import { applyPgMigrations } from "./migrations.js";
import { PgStore } from "./pg-store.js";
import { controlPayload, deltaPayloads, listenForSignals } from "./signals.js";
import { CHANNELS } from "./sql.js";

export interface PostgresStoreOptions {
  /** Source of timestamps and retry waits. default: systemClock */
  clock?: Clock;
  log?: Logger;
  /** Connections in the pool at most. default: 10 */
  poolSize?: number;
  /** Wait for one new connection, ms. default: 5000 */
  connectTimeoutMs?: number;
  /** Backoff while the server is unreachable (at start and for each checkout). default: 6 attempts, 250 ms doubling to 4 s */
  retry?: Partial<RetryPolicy>;
}

interface RawLease {
  session_id: string;
  node_id: string;
  generation: number;
  expires_at: number;
}

const toLease = (raw: RawLease): Lease => ({ sessionId: raw.session_id, nodeId: raw.node_id, generation: raw.generation, expiresAt: raw.expires_at });

/**
 * The networked Store and the cluster surface over one PostgreSQL database. Every node of
 * a service opens its own; they coordinate through leases, claims and LISTEN/NOTIFY.
 */
export class PostgresStore extends PgStore implements ClusterStore {
  private readonly retry: RetryPolicy;
  private readonly log?: Logger;
  private readonly subscriptions = new Set<SignalSubscription>();

  private constructor(db: Database, clock: Clock, retry: RetryPolicy, log?: Logger) {
    super(db, clock);
    this.retry = retry;
    this.log = log;
  }

  /**
   * Connects (retrying with backoff while the server is down), migrates under an advisory
   * lock so nodes may start together, and returns the store. Errors name the URL with the
   * password hidden: CONFIG_ERROR for a wrong URL, user or database, STORE_UNAVAILABLE when
   * the server stays unreachable.
   */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    checkDatabaseUrl(url);
    const clock = options.clock ?? systemClock;
    const retry = { ...DEFAULT_RETRY, ...options.retry };
    const db = new Database({ url, poolSize: options.poolSize, connectTimeoutMs: options.connectTimeoutMs, log: options.log, clock, retry });
    try {
      const client = await db.connect();
      try {
        await applyPgMigrations(client, new Date(clock.now()).toISOString());
      } finally {
        client.release();
      }
    } catch (error) {
      await db.end().catch(() => undefined);
      throw db.fail(error, "migrate");
    }
    return new PostgresStore(db, clock, retry, options.log);
  }

  async acquireLease(sessionId: string, nodeId: string, ttlMs: number): Promise<Lease | undefined> {
    const { rows } = await this.direct("acquire lease", sessionId, (on) => on.run<RawLease>("acquireLease", [sessionId, nodeId, ttlMs]));
    return rows[0] && toLease(rows[0]);
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease | undefined> {
    const { rows } = await this.direct("renew lease", lease.sessionId, (on) =>
      on.run<RawLease>("renewLease", [lease.sessionId, lease.nodeId, lease.generation, ttlMs]),
    );
    return rows[0] && toLease(rows[0]);
  }

  async renewLeases(nodeId: string, ttlMs: number): Promise<Lease[]> {
    const { rows } = await this.direct("renew leases", undefined, (on) => on.run<RawLease>("renewLeases", [nodeId, ttlMs]));
    return rows.map(toLease);
  }

  async releaseLease(lease: Lease): Promise<void> {
    await this.direct("release lease", lease.sessionId, (on) => on.run("releaseLease", [lease.sessionId, lease.nodeId, lease.generation]));
  }

  async expiredLeases(graceMs = 0): Promise<Lease[]> {
    const { rows } = await this.direct("expired leases", undefined, (on) => on.run<RawLease>("expiredLeases", [Math.max(0, graceMs)]));
    return rows.map(toLease);
  }

  async getLease(sessionId: string): Promise<LeaseInfo | undefined> {
    const { rows } = await this.direct("get lease", sessionId, (on) => on.run<RawLease & { live: boolean; released: boolean }>("getLease", [sessionId]));
    const raw = rows[0];
    return raw && { ...toLease(raw), live: raw.live, released: raw.released };
  }

  fenced(lease: Lease): Store {
    return new PgStore(this.db, this.clock, lease, false);
  }

  appendEventsFenced(events: readonly NewStoredEvent[], leases: readonly Lease[]): Promise<StoredEvent[]> {
    return this.appendEventRows(events, leases);
  }

  async subscribe(onSignal: (signal: ClusterSignal) => void, options: SubscribeOptions = {}): Promise<SignalSubscription> {
    const subscription = await this.direct("listen", undefined, () =>
      listenForSignals({ url: this.db.url, clock: this.clock, retry: this.retry, log: this.log }, onSignal, options),
    );
    this.subscriptions.add(subscription);
    return {
      close: async () => {
        this.subscriptions.delete(subscription);
        await subscription.close();
      },
    };
  }

  async sendDeltas(nodeId: string, deltas: readonly LiveDelta[]): Promise<void> {
    const payloads = deltaPayloads(nodeId, deltas);
    if (payloads.length === 0) return;
    // One statement: the notifications go out in this order, together.
    await this.direct("send deltas", undefined, (on) => on.run("sendDeltas", [CHANNELS.deltas, payloads]));
  }

  async sendControl(sessionId: string, action: ControlAction, data?: Record<string, unknown>): Promise<void> {
    await this.direct("send control", sessionId, (on) => on.run("sendControl", [CHANNELS.control, controlPayload(sessionId, action, data)]));
  }

  async claimWakeup(sessionId: string, dueAt: number, nodeId: string): Promise<boolean> {
    const result = await this.direct("claim wake-up", sessionId, (on) => on.run("claimWakeup", [sessionId, dueAt, nodeId]));
    return result.rowCount === 1;
  }

  async addRemoteMethod(row: RemoteMethodRow): Promise<void> {
    await this.direct(`remote method ${row.id}`, row.sessionId, (on) =>
      on.run("addRemoteMethod", [row.id, row.sessionId, row.nodeId, row.method, row.data, row.createdAt]),
    );
  }

  async listRemoteMethods(): Promise<RemoteMethodRow[]> {
    const { rows } = await this.direct("list remote methods", undefined, (on) =>
      on.run<{ id: string; session_id: string; node_id: string; method: string; data: string; created_at: string }>("listRemoteMethods", []),
    );
    return rows.map((r) => ({ id: r.id, sessionId: r.session_id, nodeId: r.node_id, method: r.method, data: r.data, createdAt: r.created_at }));
  }

  async resolveRemoteMethod(id: string, result: string): Promise<boolean> {
    const outcome = await this.direct("resolve remote method", undefined, (on) => on.run("resolveRemoteMethod", [id, result, CHANNELS.remoteResult]));
    return outcome.rowCount === 1;
  }

  async takeRemoteResult(id: string): Promise<{ result: string } | undefined> {
    const { rows } = await this.direct("take remote result", undefined, (on) => on.run<{ result: string }>("takeRemoteResult", [id]));
    return rows[0] && { result: rows[0].result };
  }

  async removeRemoteMethod(id: string): Promise<boolean> {
    const outcome = await this.direct("remove remote method", undefined, (on) => on.run("removeRemoteMethod", [id]));
    return outcome.rowCount === 1;
  }

  override async close(): Promise<void> {
    await Promise.all([...this.subscriptions].map((s) => s.close()));
    this.subscriptions.clear();
    await super.close();
  }
}

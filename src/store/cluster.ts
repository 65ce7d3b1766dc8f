import type { VeilEventBody } from "../base/events.js";
import type { NewStoredEvent, Store, StoredEvent } from "./store.js";

/**
 * What several `veil serve` nodes on one database need from the store,
 * beside the plain Store. PostgreSQL implements it (store/postgres); SQLite does not, and
 * a runtime on SQLite stays a single node. Time in leases is the database's clock, so
 * nodes with skewed clocks still agree on who holds what.
 */

/** One node's claim on one session. */
export interface Lease {
  sessionId: string;
  nodeId: string;
  /**
   * The fencing token: grows by one each time the session changes hands (or is taken
   * again after expiring), never reused. Writes through `fenced(lease)` check it.
   */
  generation: number;
  /** Epoch ms (database clock) after which another node may take the session. */
  expiresAt: number;
}

/** The owner's answer to "who holds session X": `live` false means expired or released. */
export interface LeaseInfo extends Lease {
  live: boolean;
  released: boolean;
}

/** The per-session endpoints that act on the owner's live state (POST /sessions/:id/…, DELETE /sessions/:id). */
export type ControlAction = "cancel" | "suspend" | "resume" | "close" | "compact" | "revert" | "unrevert" | "fork";

/** What an action needs beyond its session (revert's and fork's message), carried to the owner with the request. */
export interface ControlArgs {
  messageId?: string;
}

/**
 * Signals between nodes. They are hints, not data: each names what changed, and the
 * receiver reads the durable rows. A listener that lost its connection gets
 * `onReconnect` and must re-read (signals sent meanwhile are gone).
 */
export type ClusterSignal =
  /** An inbox row was committed for the session (the owner should deliver it). */
  | { kind: "inbox"; sessionId: string }
  /** Events up to `gseq` are committed; read them with listEventsGlobal({ after: lastSeen }). */
  | { kind: "events"; gseq: number }
  /** Someone asked the owner of `sessionId` to act. */
  | { kind: "control"; sessionId: string; action: ControlAction; data?: Record<string, unknown> }
  /** A result for the remote method `id` was stored; the waiting node takes it. */
  | { kind: "remote-result"; id: string; nodeId: string }
  /**
   * Live deltas (chat.chunk, thinking.chunk, tool.chunk) a node delivered to its own bus:
   * never stored, so they reach the SSE clients of the other nodes only this way.
   */
  | { kind: "deltas"; nodeId: string; deltas: LiveDelta[] };

/** One live delta as it crosses nodes. */
export interface LiveDelta {
  sessionId: string;
  ts: number;
  body: VeilEventBody;
}

export interface SignalSubscription {
  close(): Promise<void>;
}

export interface SubscribeOptions {
  /** Called after the listening connection was re-established (signals may have been missed). */
  onReconnect?: () => void;
  /** Called when a reconnect attempt fails; the subscription keeps trying. */
  onError?: (error: Error) => void;
}

/** A pending remote method of the whole service (GET /remote-methods/pending). */
export interface RemoteMethodRow {
  id: string;
  sessionId: string;
  /** The node whose tool waits for the result. */
  nodeId: string;
  method: string;
  /** JSON text of the request data. */
  data: string;
  createdAt: string;
}

export interface ClusterStore {
  /**
   * Takes the session for `nodeId` when nobody holds it, its lease expired or was released,
   * or `nodeId` already holds it. Returns the lease, or undefined while another node's
   * lease is live. A change of hands (or a retake after expiry) bumps the generation.
   */
  acquireLease(sessionId: string, nodeId: string, ttlMs: number): Promise<Lease | undefined>;
  /** Extends a lease still held with that generation; undefined when it was lost. */
  renewLease(lease: Lease, ttlMs: number): Promise<Lease | undefined>;
  /** Extends every lease the node holds, in one statement (a node's heartbeat); returns them. */
  renewLeases(nodeId: string, ttlMs: number): Promise<Lease[]>;
  /** Gives the session up (clean stop); the generation is kept, so it is never reused. */
  releaseLease(lease: Lease): Promise<void>;
  /** Leases past their expiry that were not released: sessions of dead or stuck nodes. */
  /** `graceMs`: only leases expired at least that long ago (an owner that stalled briefly renews first). */
  expiredLeases(graceMs?: number): Promise<Lease[]>;
  getLease(sessionId: string): Promise<LeaseInfo | undefined>;
  /**
   * A Store whose writes for `lease.sessionId` each check, under a share lock on the lease
   * row and atomically with the write (inside its one statement, or first in its
   * transaction), that the lease still has this node and generation; otherwise they fail
   * with LEASE_LOST (`details.sessionId`) and write nothing. A takeover waits for such a
   * write to commit, so an old owner can never write after losing the session.
   * Inbox additions and audit rows are never fenced (anyone may post to a session).
   */
  fenced(lease: Lease): Store;
  /**
   * One event batch whose rows may belong to several runs of this node: every lease is
   * checked inside the one statement. A lost one refuses the whole batch with LEASE_LOST,
   * `details.sessionId` naming its session, so the caller can drop those rows and retry.
   */
  appendEventsFenced(events: readonly NewStoredEvent[], leases: readonly Lease[]): Promise<StoredEvent[]>;

  /** One LISTEN connection for every signal; reconnects with backoff on its own. */
  subscribe(onSignal: (signal: ClusterSignal) => void, options?: SubscribeOptions): Promise<SignalSubscription>;
  /** Sends live deltas to every node's listener, in order (split into notifications that fit). */
  sendDeltas(nodeId: string, deltas: readonly LiveDelta[]): Promise<void>;
  /** Asks the owner of a session to act (cancel, suspend, …); delivered to every node. */
  sendControl(sessionId: string, action: ControlAction, data?: Record<string, unknown>): Promise<void>;

  /** True for exactly one caller service-wide per (session, due time). */
  claimWakeup(sessionId: string, dueAt: number, nodeId: string): Promise<boolean>;

  /** Records a pending remote method, so every node lists it and may answer it. */
  addRemoteMethod(row: RemoteMethodRow): Promise<void>;
  listRemoteMethods(): Promise<RemoteMethodRow[]>;
  /**
   * Stores a result (JSON text) if the method is still pending and signals its node; true
   * for the first answer only, across nodes.
   */
  resolveRemoteMethod(id: string, result: string): Promise<boolean>;
  /** The waiting node takes the stored result (once), removing the method. */
  takeRemoteResult(id: string): Promise<{ result: string } | undefined>;
  /** Drops a method still unanswered (timeout, abort); false when a result got there first. */
  removeRemoteMethod(id: string): Promise<boolean>;
}

/** True for a store that can coordinate several nodes. */
export function isClusterStore(store: Store): store is Store & ClusterStore {
  return typeof (store as Partial<ClusterStore>).acquireLease === "function" && typeof (store as Partial<ClusterStore>).fenced === "function";
}

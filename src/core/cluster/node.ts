import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "../../base/log.js";
import type { RunResult } from "../../engines/types.js";
import type { ClusterSignal, ClusterStore, ControlAction, ControlArgs, Lease, SignalSubscription } from "../../store/cluster.js";
import type { Store, StoredEvent } from "../../store/store.js";
import type { EventLog } from "../event-log.js";
import type { LiveSession } from "../live-session.js";
import type { RunFence, SessionPlacement } from "../placement.js";
import type { SessionManager } from "../session-manager.js";
import { ControlRelay, decodeAnswer } from "./control.js";
import type { ClusterRemoteMethods } from "./remote-methods.js";
import type { RunFences } from "./fencing.js";
import type { FencedEventWriter } from "./fenced-events.js";
import type { DeltaRelayBus } from "./delta-relay.js";
import { handPendingToOwner, runHereOrAwaitOwner } from "./hand-off.js";

export interface ClusterNodeDeps {
  store: Store & ClusterStore;
  /** The node's session manager, which places its sessions with this node (so it comes after it). */
  sessions(): SessionManager;
  events: EventLog;
  /** The fences of this node's runs, shared with the event log's writer. */
  fences: RunFences;
  /** The event log's writer, which knows the rows this node wrote. */
  eventWriter: FencedEventWriter;
  log: Logger;
  /** settings.cluster.leaseSeconds */
  leaseSeconds: number;
  /** This node's id (newNodeId()), known before the node so the services built first can use it. */
  nodeId: string;
  /** The remote methods whose tools wait on this node (remote-result signals, takeovers). */
  remoteMethods?: ClusterRemoteMethods;
  /** The node's bus, which hands the other nodes' live deltas to this node's subscribers. */
  deltas?: DeltaRelayBus;
}

/** A node id unique across the machines of a cluster and the restarts of a process. */
export function newNodeId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
}

const EVENT_PAGE = 1000;
/** The longest wait past a lease's expiry before another node takes the session. */
const TAKEOVER_GRACE_MAX_MS = 3000;

interface RemoteWaiter {
  messageId: string;
  resolve(result: RunResult): void;
}

/**
 * One `veil serve` node among several on one PostgreSQL, and the placement of its session
 * manager's sessions. It holds leases on the sessions it runs (renewed by a heartbeat,
 * released at shutdown), fences every write of a run with its lease, takes over sessions
 * whose owner's lease expired, forwards control actions to a session's owner, wakes the
 * owner's run on the `inbox` signal, and relays events other nodes stored to the local bus
 * so every node's SSE sees every session.
 */
export class ClusterNode implements SessionPlacement {
  readonly nodeId: string;
  private readonly held = new Map<string, Lease>();
  private readonly waiters = new Map<string, RemoteWaiter[]>();
  private subscription: SignalSubscription | null = null;
  private timers: NodeJS.Timeout[] = [];
  private cursor = 0;
  private relaying: Promise<void> | null = null;
  private relayAgain = false;
  private signalled = 0;
  private mustRead = false;
  /** When a heartbeat, takeover poll or listener reconnect last failed (epoch ms). */
  private unreachableAt = 0;
  private closed = false;
  private readonly relay: ControlRelay;
  /** Results of runs on other nodes (remoteResult), so callers can tell who ran a message. */
  private readonly remoteResults = new WeakSet<RunResult>();
  private readonly remoteMethods: ClusterRemoteMethods | undefined;
  private readonly fences: RunFences;
  private takeOverListeners: ((sessionId: string) => Promise<void> | void)[] = [];

  constructor(private readonly deps: ClusterNodeDeps) {
    this.nodeId = deps.nodeId;
    this.remoteMethods = deps.remoteMethods;
    this.relay = new ControlRelay({ store: deps.store, nodeId: this.nodeId, log: deps.log, act: (id, action, args) => this.actHere(id, action, () => this.sessions.controlHere(id, action, args)) });
    this.fences = deps.fences;
    this.fences.onLost((sessionId) => this.dropSession(sessionId));
  }

  private get sessions(): SessionManager {
    return this.deps.sessions();
  }

  /** Called after this node took a dead node's session over (and closed its cut run), e.g. to re-arm its wake-up. */
  onTakeOver(listener: (sessionId: string) => Promise<void> | void): void {
    this.takeOverListeners.push(listener);
  }

  holds(sessionId: string): boolean {
    return this.held.has(sessionId);
  }

  /** The fence of a run starting here: the lease this node holds now; none when another node holds it, which then answers the messages waiting here. */
  async openRun(sessionId: string, live: LiveSession): Promise<RunFence | undefined> {
    if (!this.held.has(sessionId) && !(await this.claim(sessionId))) {
      this.deps.log.info("not starting a run: another node holds the session", { sessionId });
      handPendingToOwner(this, sessionId, live);
      return undefined;
    }
    return this.fences.open(this.held.get(sessionId)!);
  }

  /** A message stored for an idle session: run here when this node holds (or takes) the lease, else wait for the owner's result. */
  startOrAwait(sessionId: string, live: LiveSession, messageId: string, start: () => void): void {
    void runHereOrAwaitOwner(this, this.deps.log, sessionId, live, messageId, start);
  }

  consumedHere(sessionId: string, messageId: string): void {
    this.forgetRemoteResult(sessionId, messageId);
  }

  private get ttlMs(): number {
    return Math.max(1, this.deps.leaseSeconds) * 1000;
  }

  /** Listens for signals and starts the heartbeat and the takeover poll; call before recovery. */
  async start(): Promise<void> {
    const { store, log } = this.deps;
    this.cursor = await store.lastEventGseq();
    this.subscription = await store.subscribe((signal) => this.onSignal(signal), {
      onReconnect: () => {
        this.relayEvents();
        void this.remoteMethods?.recheck();
        // Inbox signals sent while the listener was down are gone: look at every held session's inbox.
        for (const sessionId of this.held.keys()) {
          void this.sessions.resumeInbox(sessionId).catch((error) => log.warn("inbox wake-up failed", { sessionId, error: String(error) }));
        }
      },
      onError: (error) => {
        this.unreachableAt = Date.now();
        log.warn("cluster signals: reconnect failed", { error: String(error) });
      },
    });
    const every = (ms: number, fn: () => Promise<void>) => {
      const timer = setInterval(
        () =>
          void fn().catch((error) => {
            this.unreachableAt = Date.now();
            log.warn("cluster task failed", { error: String(error) });
          }),
        ms,
      );
      timer.unref();
      this.timers.push(timer);
    };
    every(this.ttlMs / 3, () => this.heartbeat());
    every(Math.max(250, this.ttlMs / 4), () => this.takeOver());
    log.info("cluster node started", { nodeId: this.nodeId, leaseSeconds: this.deps.leaseSeconds });
  }

  async claim(sessionId: string): Promise<boolean> {
    if (this.closed) return false;
    const lease = await this.deps.store.acquireLease(sessionId, this.nodeId, this.ttlMs);
    if (!lease) return false;
    const before = this.held.get(sessionId);
    // Another node may have published for this session meanwhile: re-read its last seq.
    if (!before || before.generation !== lease.generation) this.deps.events.forgetSeq(sessionId);
    this.held.set(sessionId, lease);
    return true;
  }

  remoteResult(sessionId: string, messageId: string): Promise<RunResult> {
    return new Promise((resolve) => {
      const list = this.waiters.get(sessionId) ?? [];
      list.push({ messageId, resolve });
      this.waiters.set(sessionId, list);
    });
  }

  forgetRemoteResult(sessionId: string, messageId: string): void {
    const left = (this.waiters.get(sessionId) ?? []).filter((waiter) => waiter.messageId !== messageId);
    if (left.length) this.waiters.set(sessionId, left);
    else this.waiters.delete(sessionId);
  }

  /** True for a result remoteResult gave: the run that consumed the message ran on another node. */
  ranElsewhere(result: RunResult): boolean {
    return this.remoteResults.has(result);
  }

  /**
   * A control endpoint (cancel, suspend, resume, close, compact, revert, unrevert, fork) for any session: the owner
   * acts and its answer (value or error) is this node's; with no live owner this node takes
   * the session (closing the run a dead owner cut) and acts itself. A closed session has no
   * live state anywhere: answered here.
   */
  async control<T>(sessionId: string, action: ControlAction, here: () => Promise<T>, args: ControlArgs = {}): Promise<T> {
    if ((await this.sessions.get(sessionId)).status === "closed") return here();
    for (;;) {
      if (this.closed || this.held.has(sessionId)) return this.actHere(sessionId, action, here);
      const lease = await this.deps.store.getLease(sessionId);
      if (lease?.live && lease.nodeId !== this.nodeId) {
        const answer = await this.relay.ask(sessionId, action, lease, () => this.closed, args);
        if (answer !== "moved") return decodeAnswer(answer) as T;
        continue;
      }
      if (!(await this.claim(sessionId))) continue;
      const cut = lease !== undefined && lease.nodeId !== this.nodeId && !lease.released;
      if (cut) {
        await this.sessions.recoverRun(sessionId);
        await this.remoteMethods?.dropDeadNode(sessionId, lease.nodeId);
      }
      const value = await this.actHere(sessionId, action, here);
      // Messages the dead owner left queued run here now (a suspended or closed session keeps them).
      if (cut) await this.sessions.resumeInbox(sessionId);
      return value;
    }
  }

  /** A closed session needs no owner: its lease is given up, so heartbeats stop renewing it. */
  private async actHere<T>(sessionId: string, action: ControlAction, here: () => Promise<T>): Promise<T> {
    const value = await here();
    const lease = this.held.get(sessionId);
    if (action === "close" && lease && !this.closed) {
      this.held.delete(sessionId);
      await this.deps.store.releaseLease(lease).catch((error) => this.deps.log.warn("could not release a closed session's lease", { sessionId, error: String(error) }));
    }
    return value;
  }

  async release(sessionId: string): Promise<void> {
    const lease = this.held.get(sessionId);
    if (!lease || this.closed) return;
    this.held.delete(sessionId);
    await this.deps.store.releaseLease(lease).catch((error) => this.deps.log.warn("could not give up an idle session's lease", { sessionId, error: String(error) }));
  }

  /** A claim shared by every node: true for one node per (session, due time). */
  claimWakeup(sessionId: string, dueAt: number): Promise<boolean> {
    return this.deps.store.claimWakeup(sessionId, dueAt, this.nodeId);
  }

  /** After sessions.shutdown(): stops listening and gives every held session up. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    await this.subscription?.close().catch(() => undefined);
    await this.relaying?.catch(() => undefined);
    await Promise.allSettled([...this.held.values()].map((lease) => this.deps.store.releaseLease(lease)));
    this.held.clear();
  }

  private onSignal(signal: ClusterSignal): void {
    if (this.closed) return;
    if (signal.kind === "events") this.relayEvents(signal.gseq);
    else if (signal.kind === "control") this.relay.onSignal(signal.sessionId, signal.action, signal.data);
    else if (signal.kind === "remote-result" && signal.nodeId === this.nodeId) {
      void this.remoteMethods?.take(signal.id).catch((error) => this.deps.log.warn("remote method result could not be taken", { id: signal.id, error: String(error) }));
    }
    else if (signal.kind === "deltas") this.deps.deltas?.deliverRemote(signal.nodeId, signal.deltas);
    else if (signal.kind === "inbox" && this.held.has(signal.sessionId)) {
      void this.sessions.resumeInbox(signal.sessionId).catch((error) => this.deps.log.warn("inbox wake-up failed", { sessionId: signal.sessionId, error: String(error) }));
    }
  }

  private async heartbeat(): Promise<void> {
    if (this.closed || this.held.size === 0) return;
    // Only leases held before the statement ran can be missing from its answer: one taken
    // (or given up) while it ran is not lost.
    const before = new Map(this.held);
    const renewed = await this.deps.store.renewLeases(this.nodeId, this.ttlMs);
    const still = new Map(renewed.map((lease) => [lease.sessionId, lease]));
    for (const [id, lease] of before) {
      if (this.held.get(id) !== lease) continue;
      const now = still.get(id);
      if (!now || now.generation !== lease.generation) {
        // A run here is stopped through its fence (which drops the session); otherwise drop it now.
        if (!this.fences.lost(id, "the heartbeat found the lease held by another node")) this.dropSession(id);
      }
    }
    for (const lease of renewed) if (this.held.has(lease.sessionId)) this.held.set(lease.sessionId, lease);
  }

  /** The session is another node's now: forget the lease and stop whatever of it runs here. */
  private dropSession(sessionId: string): void {
    const lease = this.held.get(sessionId);
    this.held.delete(sessionId);
    this.deps.log.warn("lost the lease of a session (another node took it over); stopping it here", { sessionId, nodeId: this.nodeId, generation: lease?.generation });
    void this.sessions
      .moved(sessionId)
      .then((live) => live && handPendingToOwner(this, sessionId, live))
      .catch((error) => this.deps.log.warn("could not stop a lost session", { sessionId, error: String(error) }));
  }

  /** Sessions of dead nodes: take the lease, close the cut run, run what is queued. */
  private async takeOver(): Promise<void> {
    if (this.closed) return;
    // After this node could not reach the database, the owners could not either: their leases
    // ran out together with ours. Give them a lease's time to renew before taking anything.
    if (Date.now() - this.unreachableAt < this.ttlMs) return;
    const { store, log } = this.deps;
    const sessions = this.sessions;
    // A lease is taken only once it has been expired for a while: an owner whose heartbeat
    // came late (a loaded machine, a GC pause) renews it first and keeps its run.
    for (const expired of await store.expiredLeases(Math.min(this.ttlMs / 2, TAKEOVER_GRACE_MAX_MS))) {
      if (expired.nodeId === this.nodeId && this.held.has(expired.sessionId)) continue;
      if (!(await this.claim(expired.sessionId))) continue;
      log.info("took over a session", { sessionId: expired.sessionId, from: expired.nodeId, nodeId: this.nodeId });
      await sessions.recoverRun(expired.sessionId);
      await this.remoteMethods?.dropDeadNode(expired.sessionId, expired.nodeId);
      for (const listener of this.takeOverListeners) {
        await Promise.resolve(listener(expired.sessionId)).catch((error) => log.warn("take-over listener failed", { sessionId: expired.sessionId, error: String(error) }));
      }
      await sessions.resumeInbox(expired.sessionId);
    }
  }

  /**
   * One relay at a time; a signal during a relay makes it page once more. `signalled`: the
   * gseq a signal named (absent after a reconnect: read whatever is there).
   */
  private relayEvents(signalled?: number): void {
    if (signalled === undefined) this.mustRead = true;
    else this.signalled = Math.max(this.signalled, signalled);
    if (this.relaying) {
      this.relayAgain = true;
      return;
    }
    this.relaying = (async () => {
      do {
        this.relayAgain = false;
        await this.relayPages();
      } while (this.relayAgain && !this.closed);
    })()
      .catch((error) => this.deps.log.warn("cluster event relay failed", { error: String(error) }))
      .finally(() => (this.relaying = null));
  }

  private async relayPages(): Promise<void> {
    const { store, events } = this.deps;
    // A local write whose rows a page shows has its gseqs noted once it settles.
    await events.flush();
    // Only this node's own batches since the cursor: nothing to read (the common case for a busy owner).
    if (!this.mustRead && this.signalled <= this.cursor) return;
    if (!this.mustRead && this.deps.eventWriter.takeOwnRange(this.cursor, this.signalled)) {
      this.cursor = this.signalled;
      return;
    }
    this.mustRead = false;
    for (;;) {
      const rows = await store.listEventsGlobal({ after: this.cursor, limit: EVENT_PAGE });
      await events.flush();
      for (const row of rows) {
        this.cursor = row.gseq;
        if (this.deps.eventWriter.takeOwn(row.gseq)) continue;
        const event = events.deliverStored(row);
        if (event.type === "chat.done") await this.settleWaiters(row, event as Extract<typeof event, { type: "chat.done" }>);
      }
      if (rows.length < EVENT_PAGE) return;
    }
  }

  /**
   * A message that entered the history after this answer went to a later run: this node read
   * the earlier run's chat.done late (it was catching up), after the next run had taken it.
   */
  private async deliveredAfter(messageId: string, answerSeq: number): Promise<boolean> {
    const row = await this.deps.store.getMessage(messageId);
    return row !== undefined && row.seq > answerSeq;
  }

  /** A run on another node ended: messages sent here that it consumed get its result. */
  private async settleWaiters(row: StoredEvent, done: { content: string | null; finishReason: string; stopReason: string; tokenUsage: RunResult["usage"]; messageId: string | null; cost_usd?: number; error?: { code: string; message: string }; structured?: unknown }): Promise<void> {
    const list = this.waiters.get(row.session_id);
    if (!list?.length) return;
    const queued = new Set((await this.deps.store.listInbox(row.session_id)).map((item) => item.id));
    const result: RunResult = {
      content: done.content,
      finishReason: done.finishReason,
      stopReason: done.stopReason as RunResult["stopReason"],
      messageId: done.messageId,
      usage: done.tokenUsage,
      iterations: 0,
      ...(done.cost_usd !== undefined ? { costUsd: done.cost_usd } : {}),
      ...(done.error ? { error: done.error } : {}),
      ...("structured" in done ? { structured: done.structured } : {}),
    };
    this.remoteResults.add(result);
    const answer = done.messageId ? await this.deps.store.getMessage(done.messageId) : undefined;
    const left: RemoteWaiter[] = [];
    for (const waiter of list) {
      if (queued.has(waiter.messageId) || (answer && (await this.deliveredAfter(waiter.messageId, answer.seq)))) left.push(waiter);
      else waiter.resolve(result);
    }
    if (left.length) this.waiters.set(row.session_id, left);
    else this.waiters.delete(row.session_id);
  }
}

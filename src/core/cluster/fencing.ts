import type { Logger } from "../../base/log.js";
import { VeilError } from "../../errors.js";
import type { ClusterStore, Lease } from "../../store/cluster.js";
import type { NewStoredEvent, Store, StoredEvent } from "../../store/store.js";
import type { RunFence } from "../placement.js";

export interface RunFencesDeps {
  store: Store & ClusterStore;
  log: Logger;
}

/**
 * What one run on this node writes through: a store whose writes of the session check the
 * lease the run started under (ClusterStore.fenced), and a signal that aborts when that
 * lease is found lost (a refused write, or the heartbeat).
 */
interface OpenFence extends RunFence {
  readonly lease: Lease;
  lost: boolean;
  controller: AbortController;
}

/**
 * The fences of the runs on one node. An old owner that paused (SIGSTOP, a long GC, a
 * network partition) and lost its lease can then write nothing of that session after the
 * takeover: each write checks the lease inside its statement, and the first refusal stops
 * the run (its tools aborted, no further model call).
 */
export class RunFences {
  private readonly runs = new Map<string, OpenFence>();
  private readonly lostListeners: ((sessionId: string, reason: string) => void)[] = [];

  constructor(private readonly deps: RunFencesDeps) {}

  /** Called once per fence when its lease is found lost (the node stops the session here). */
  onLost(listener: (sessionId: string, reason: string) => void): void {
    this.lostListeners.push(listener);
  }

  /** A fence for a run starting now under `lease`; replaces any earlier one of the session. */
  open(lease: Lease): RunFence {
    const controller = new AbortController();
    const fence: OpenFence = {
      lease,
      controller,
      signal: controller.signal,
      lost: false,
      store: watchLoss(this.deps.store.fenced(lease), (error) => this.lost(lease.sessionId, error.message)),
      close: () => {
        if (this.runs.get(lease.sessionId) === fence) this.runs.delete(lease.sessionId);
      },
    };
    this.runs.set(lease.sessionId, fence);
    return fence;
  }

  /** The lease of `sessionId` is gone: its run (if any) is told once, and the node once. False: no run here to tell. */
  lost(sessionId: string, reason: string): boolean {
    const fence = this.runs.get(sessionId);
    if (!fence) return false;
    if (fence.lost) return true;
    fence.lost = true;
    this.deps.log.warn("lease lost: the run of this session stops here and writes nothing more", {
      sessionId,
      nodeId: fence.lease.nodeId,
      generation: fence.lease.generation,
      reason,
    });
    fence.controller.abort(new VeilError("LEASE_LOST", `this node lost session ${sessionId} to another node; the run was stopped (${reason})`));
    for (const listener of this.lostListeners) listener(sessionId, reason);
    return true;
  }

  /**
   * The event log's writer on a cluster node: one statement per batch that checks the lease
   * of every run with rows in it. Rows of a lost run are refused (null: neither stored nor
   * delivered) and the rest are written; sessions without a run here write unfenced.
   */
  async appendEvents(rows: readonly NewStoredEvent[]): Promise<(StoredEvent | null)[]> {
    const out: (StoredEvent | null)[] = rows.map(() => null);
    for (;;) {
      const pending = rows.map((row, i) => ({ row, i })).filter(({ row }) => !this.runs.get(row.session_id)?.lost);
      if (pending.length === 0) return out;
      const leases = [...new Set(pending.map(({ row }) => row.session_id))].flatMap((id) => {
        const fence = this.runs.get(id);
        return fence ? [fence.lease] : [];
      });
      const batch = pending.map(({ row }) => row);
      try {
        const written = leases.length ? await this.deps.store.appendEventsFenced(batch, leases) : await this.deps.store.appendEvents(batch);
        written.forEach((row, k) => (out[pending[k]!.i] = row));
        return out;
      } catch (error) {
        const sessionId = leaseLostSession(error);
        if (!sessionId || !this.runs.has(sessionId)) throw error;
        this.lost(sessionId, (error as Error).message);
      }
    }
  }
}

function leaseLostSession(error: unknown): string | undefined {
  if (!(error instanceof VeilError) || error.code !== "LEASE_LOST") return undefined;
  const id = error.details?.sessionId;
  return typeof id === "string" ? id : undefined;
}

/** The store with every LEASE_LOST refusal reported to `onLost` (and still thrown). */
function watchLoss(store: Store, onLost: (error: Error) => void): Store {
  const report = (error: unknown) => {
    if (error instanceof VeilError && error.code === "LEASE_LOST") onLost(error);
    throw error;
  };
  return new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        return result instanceof Promise ? result.catch(report) : result;
      };
    },
  });
}

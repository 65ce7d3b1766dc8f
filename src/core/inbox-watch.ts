import type { Clock } from "../base/clock.js";

/**
 * Even with no arrival seen, a boundary reads the inbox at least this often: a cluster
 * signal lost while the LISTEN connection was down delays a message by this much at most.
 */
export const INBOX_RECHECK_MS = 1000;

/**
 * Whether a run's boundary has to read the inbox. Every way a row gets there is seen by this
 * process: a send here (SessionManager.send), a Stop hook's continuation, and, on a cluster,
 * the `inbox` signal another node's row raises (ClusterNode → SessionManager.resumeInbox).
 * A boundary with none of them since the last read skips the round trip.
 */
export class InboxWatch {
  private unread = true;
  private lastRead = Number.NEGATIVE_INFINITY;

  constructor(private readonly clock: Pick<Clock, "monotonic">) {}

  /** A row may have been queued for the session. */
  arrived(): void {
    this.unread = true;
  }

  /** True when the boundary must read the inbox; the read then counts as done. */
  mustRead(pendingHere: number): boolean {
    const now = this.clock.monotonic();
    if (!this.unread && pendingHere === 0 && now - this.lastRead < INBOX_RECHECK_MS) return false;
    // Cleared before the read, so a row that lands during it is read at the next boundary.
    this.unread = false;
    this.lastRead = now;
    return true;
  }
}

import type { Clock } from "../base/clock.js";

/**
 * Even with no arrival seen, a boundary reads the inbox at least this often: a cluster
 * signal lost while the LISTEN connection was down delays a message by this much at most.
 */
export const INBOX_RECHECK_MS = 1000;

/**
 * Even with no change seen here, the loop re-reads the session's budget_override at least
 * this often before a model call: an update-session made on another node applies this late at most.
 */
export const BUDGET_RECHECK_MS = 1000;

/**
 * Whether a run must read a stored value again before it uses it, or may use what it read
 * last. Every change this process makes or hears of is reported with changed(); a change
 * it cannot see (another node's write, a lost signal) is picked up by the recheck interval.
 *
 * The inbox: a send here (SessionManager.send), a Stop hook's continuation, and, on a
 * cluster, the `inbox` signal another node's row raises (ClusterNode → SessionManager.resumeInbox).
 * The budget: agent_control update-session (SessionManager.budgetChanged).
 */
export class ChangeWatch {
  private unread = true;
  private lastRead = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly clock: Pick<Clock, "monotonic">,
    private readonly recheckMs: number,
  ) {}

  /** The stored value may have changed. */
  changed(): void {
    this.unread = true;
  }

  /** True when the value must be read (`force`: whatever was seen); the read then counts as done. */
  mustRead(force = false): boolean {
    const now = this.clock.monotonic();
    if (!force && !this.unread && now - this.lastRead < this.recheckMs) return false;
    // Cleared before the read, so a change that lands during it is read next time.
    this.unread = false;
    this.lastRead = now;
    return true;
  }
}

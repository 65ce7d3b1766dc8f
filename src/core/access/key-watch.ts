import type { Clock } from "../../base/clock.js";

export interface KeyWatchDeps {
  clock: Clock;
  /** Whether the key still works for what its watchers hold open (not revoked, not expired, scope kept). */
  stillValid(keyId: string): Promise<boolean>;
  /** How often watched keys are checked again, ms: a change made on another node shows within it (plus the key cache's age). */
  intervalMs: number;
}

/**
 * Things a key holds open (its SSE streams) end once the key stops working. A revoke on this
 * node ends them at once; a revoke on another node, an expiry or a narrowed scope shows at
 * the next check, which re-reads each watched key every intervalMs (one timer for all).
 */
export class KeyWatch {
  private readonly watched = new Map<string, Set<() => void>>();
  private cancelTimer: (() => void) | null = null;
  private checking = false;

  constructor(private readonly deps: KeyWatchDeps) {}

  /** Calls `lost` once when key `keyId` stops working; the returned function stops watching. */
  watch(keyId: string, lost: () => void): () => void {
    let watchers = this.watched.get(keyId);
    if (!watchers) this.watched.set(keyId, (watchers = new Set()));
    const entry = () => lost();
    watchers.add(entry);
    this.arm();
    return () => this.remove(keyId, entry);
  }

  /** The key is known gone (revoked on this node): its watchers are told at once. */
  lost(keyId: string): void {
    const watchers = this.watched.get(keyId);
    if (!watchers) return;
    this.watched.delete(keyId);
    for (const lost of watchers) lost();
    if (this.watched.size === 0) this.disarm();
  }

  /** Keys with something open, for tests and gauges. */
  get size(): number {
    return this.watched.size;
  }

  private remove(keyId: string, entry: () => void): void {
    const watchers = this.watched.get(keyId);
    if (!watchers?.delete(entry)) return;
    if (watchers.size === 0) this.watched.delete(keyId);
    if (this.watched.size === 0) this.disarm();
  }

  private arm(): void {
    if (this.cancelTimer || this.checking) return;
    this.cancelTimer = this.deps.clock.setTimer(this.deps.intervalMs, () => {
      this.cancelTimer = null;
      void this.check();
    });
  }

  private disarm(): void {
    this.cancelTimer?.();
    this.cancelTimer = null;
  }

  private async check(): Promise<void> {
    this.checking = true;
    try {
      for (const keyId of [...this.watched.keys()]) {
        // A store that cannot be read keeps streams open: a refusal needs the row to say so.
        const valid = await this.deps.stillValid(keyId).catch(() => true);
        if (!valid) this.lost(keyId);
      }
    } finally {
      this.checking = false;
      if (this.watched.size > 0) this.arm();
    }
  }
}

import type { RunObserver } from "./recorder.js";

/** Who watches the runs: per session (multi-agent delivery) and of every session (cluster). */
export class RunObservers {
  private readonly bySession = new Map<string, Set<RunObserver>>();
  /** Observers of every session's runs (cluster: replies for messages other nodes sent). */
  private readonly every = new Set<RunObserver>();

  observe(sessionId: string, observer: RunObserver): () => void {
    let set = this.bySession.get(sessionId);
    if (!set) this.bySession.set(sessionId, (set = new Set()));
    set.add(observer);
    return () => {
      set!.delete(observer);
      if (set!.size === 0) this.bySession.delete(sessionId);
    };
  }

  observeEvery(observer: RunObserver): () => void {
    this.every.add(observer);
    return () => void this.every.delete(observer);
  }

  /** This session's observers. */
  of(sessionId: string): Iterable<RunObserver> {
    return this.bySession.get(sessionId) ?? [];
  }

  /** This session's observers, then those of every session (a snapshot). */
  forRun(sessionId: string): RunObserver[] {
    return [...this.of(sessionId), ...this.every];
  }
}

/** Time source. Pass a Clock in; never read Date.now() in logic that tests must control. */
export interface Clock {
  /** Wall time in epoch milliseconds. */
  now(): number;
  /** Monotonic milliseconds, for durations. */
  monotonic(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `fn` after `ms`; returns a cancel function. */
  setTimer(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep(ms, signal) {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
  setTimer(ms, fn) {
    // setTimeout caps at 2^31-1 ms; longer waits re-arm in steps.
    const MAX = 2 ** 31 - 1;
    let handle: NodeJS.Timeout;
    const due = Date.now() + ms;
    const arm = () => {
      const left = due - Date.now();
      handle = setTimeout(left > MAX ? arm : fn, Math.max(0, Math.min(left, MAX)));
      handle.unref?.();
    };
    arm();
    return () => clearTimeout(handle);
  },
};

/** A clock tests move by hand: timers fire only inside advance(). */
export class ManualClock implements Clock {
  private wall: number;
  private mono = 0;
  private timers: { due: number; fn: () => void; id: number }[] = [];
  private nextId = 1;

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.wall = start;
  }

  now(): number {
    return this.wall;
  }

  monotonic(): number {
    return this.mono;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const cancel = this.setTimer(ms, () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      });
      const onAbort = () => {
        cancel();
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  setTimer(ms: number, fn: () => void): () => void {
    const id = this.nextId++;
    this.timers.push({ due: this.mono + Math.max(0, ms), fn, id });
    return () => {
      this.timers = this.timers.filter((t) => t.id !== id);
    };
  }

  /** Moves time forward, firing due timers in order; awaits microtasks between them. */
  async advance(ms: number): Promise<void> {
    const target = this.mono + ms;
    for (;;) {
      this.timers.sort((a, b) => a.due - b.due || a.id - b.id);
      const next = this.timers[0];
      if (!next || next.due > target) break;
      this.timers.shift();
      this.wall += next.due - this.mono;
      this.mono = next.due;
      next.fn();
      await flushMicrotasks();
    }
    this.wall += target - this.mono;
    this.mono = target;
    await flushMicrotasks();
  }

  /** Jumps wall time without moving monotonic time (a clock change). */
  jumpWall(ms: number): void {
    this.wall += ms;
  }

  pendingTimers(): number {
    return this.timers.length;
  }
}

async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
  await new Promise<void>((resolve) => setImmediate(resolve));
}

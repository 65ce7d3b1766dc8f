import type { Disposable } from "../types.js";

/**
 * What a runtime finds out about the machine once (a probe that spawns processes), kept
 * for its lifetime: detected ahead without blocking (warm), or on the spot, blocking,
 * when nothing warmed it yet (get).
 */
export class DetectOnce<T> implements Disposable {
  private result?: T;
  private probing?: Promise<T>;

  constructor(
    private readonly detect: () => T,
    private readonly detectAsync: () => Promise<T>,
  ) {}

  /** The result; detected here, blocking, when no warm-up has finished it yet. */
  get(): T {
    this.result ??= this.detect();
    return this.result;
  }

  /** Detects ahead without blocking (a warm-up); get() after it returns at once. */
  warm(): Promise<T> {
    if (this.result) return Promise.resolve(this.result);
    this.probing ??= this.detectAsync().then((found) => (this.result ??= found));
    return this.probing;
  }

  dispose(): void {}
}

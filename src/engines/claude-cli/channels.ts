/** An unbounded FIFO with an async take, for values produced by callbacks and read by one loop. */
export class AsyncQueue<T> {
  private readonly items: T[] = [];
  private waiter: ((value: T | undefined) => void) | null = null;
  private closed = false;

  push(item: T): void {
    if (this.closed) return;
    if (this.waiter) {
      const resolve = this.waiter;
      this.waiter = null;
      resolve(item);
    } else this.items.push(item);
  }

  /** The next item, or undefined once closed and empty. */
  take(): Promise<T | undefined> {
    if (this.items.length > 0) return Promise.resolve(this.items.shift());
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => (this.waiter = resolve));
  }

  /** Removes and returns every item not taken yet. */
  drain(): T[] {
    return this.items.splice(0);
  }

  close(): void {
    this.closed = true;
    if (this.waiter) {
      const resolve = this.waiter;
      this.waiter = null;
      resolve(undefined);
    }
  }

  get isClosed(): boolean {
    return this.closed;
  }
}

/**
 * The SDK's streaming input: user messages pushed here reach the SDK in order; the SDK
 * reads the next one only between its turns (after a `result`), which is what makes a
 * mid-run message land after the in-flight tool result.
 */
export class PromptChannel<M> implements AsyncIterable<M> {
  private readonly queue = new AsyncQueue<M>();

  push(message: M): void {
    this.queue.push(message);
  }

  end(): void {
    this.queue.close();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<M> {
    for (;;) {
      const next = await this.queue.take();
      if (next === undefined) return;
      yield next;
    }
  }
}

/** A promise with its resolve exposed. */
export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

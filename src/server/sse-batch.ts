/**
 * Frames for one SSE client that arrive within one window leave as one chunk: with many
 * clients the cost of a stream is per write (one socket write per client), not per byte, and
 * a streamed answer publishes a delta per token. The first frame after a quiet window goes at
 * the next turn of the event loop, so a lone event is not delayed; a burst is sent at most
 * once a window. One timer serves every client.
 *
 * The window stretches with the cost of a flush: writing to 300 clients takes several
 * milliseconds of the event loop (one socket write each), and flushing that every 10 ms left
 * the runs a fraction of the loop. The next flush waits at least LOAD_FACTOR times as long as the last one took, so
 * fan-out uses at most 1 / (1 + LOAD_FACTOR) of the loop; readers then get events a little
 * later in larger chunks, never fewer of them. A flush goes SLICE_SIZE clients at a time, with
 * the loop's other I/O served in between, so no request waits for a whole fan-out.
 */
export const FLUSH_WINDOW_MS = 10;
const LOAD_FACTOR = 3;
const MAX_WINDOW_MS = 100;
const SLICE_SIZE = 50;

export interface Batched {
  /** Writes out what the client has pending. */
  flush(): void;
}

export interface FlushSchedulerOptions {
  windowMs?: number;
  loadFactor?: number;
  maxWindowMs?: number;
  /** Clients written to in one go before the loop serves other I/O. */
  sliceSize?: number;
  now?: () => number;
}

export class FlushScheduler {
  private readonly dirty = new Set<Batched>();
  private scheduled = false;
  private lastFlushEnd = -Infinity;
  private lastFlushCost = 0;
  private readonly windowMs: number;
  private readonly loadFactor: number;
  private readonly maxWindowMs: number;
  private readonly sliceSize: number;
  private readonly now: () => number;

  constructor(options: FlushSchedulerOptions = {}) {
    this.windowMs = options.windowMs ?? FLUSH_WINDOW_MS;
    this.loadFactor = options.loadFactor ?? LOAD_FACTOR;
    this.maxWindowMs = options.maxWindowMs ?? MAX_WINDOW_MS;
    this.sliceSize = options.sliceSize ?? SLICE_SIZE;
    this.now = options.now ?? (() => performance.now());
  }

  /** `stream` has frames pending: it is flushed with every other pending client at the next window. */
  schedule(stream: Batched): void {
    this.dirty.add(stream);
    if (!this.scheduled) this.arm();
  }

  private arm(): void {
    this.scheduled = true;
    const wait = this.delay();
    if (wait <= 0) setImmediate(this.flushAll);
    else setTimeout(this.flushAll, wait);
  }

  /** How long a flush scheduled now waits: until a window (stretched by the last flush's cost) has passed since it ended. */
  delay(): number {
    const window = Math.min(this.maxWindowMs, Math.max(this.windowMs, this.loadFactor * this.lastFlushCost));
    return this.lastFlushEnd + window - this.now();
  }

  private readonly flushAll = (): void => {
    const streams = [...this.dirty];
    this.dirty.clear();
    // Stays scheduled while the slices go: what arrives meanwhile waits for the next window.
    this.flushSlice(streams, 0, 0);
  };

  /**
   * Writes to `sliceSize` clients, then lets the loop serve I/O (a health probe, the runs'
   * own sockets) before the next slice. The socket writes happen after the slice returns
   * (web-stream reads resolve, corked responses write on the next tick), before the next
   * immediate: a slice's cost is measured to there.
   */
  private flushSlice(streams: Batched[], from: number, costSoFar: number): void {
    const start = this.now();
    const end = Math.min(streams.length, from + this.sliceSize);
    for (let i = from; i < end; i++) streams[i]!.flush();
    setImmediate(() => {
      const cost = costSoFar + (this.now() - start);
      if (end < streams.length) return this.flushSlice(streams, end, cost);
      this.scheduled = false;
      this.lastFlushEnd = this.now();
      this.lastFlushCost = cost;
      if (this.dirty.size > 0) this.arm();
    });
  }
}

/** The process's scheduler: one timer for every SSE client of every server in it. */
const shared = new FlushScheduler();

export function scheduleFlush(stream: Batched): void {
  shared.schedule(stream);
}

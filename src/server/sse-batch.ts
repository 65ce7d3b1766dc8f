/**
 * Frames for one SSE client that arrive within one window leave as one chunk: with many
 * clients the cost of a stream is per write (one socket write, one web-stream read per
 * client), not per byte, and a streamed answer publishes a delta per token. The first
 * frame after a quiet window goes at the next turn of the event loop, so a lone event is
 * not delayed; a burst is sent at most every FLUSH_WINDOW_MS. One timer serves every client.
 */
export const FLUSH_WINDOW_MS = 10;

export interface Batched {
  /** Writes out what the client has pending. */
  flush(): void;
}

const dirty = new Set<Batched>();
let scheduled = false;
let lastFlush = -Infinity;

/** `stream` has frames pending: it is flushed with every other pending client at the next window. */
export function scheduleFlush(stream: Batched): void {
  dirty.add(stream);
  if (scheduled) return;
  scheduled = true;
  const wait = lastFlush + FLUSH_WINDOW_MS - performance.now();
  if (wait <= 0) setImmediate(flushAll);
  else setTimeout(flushAll, wait);
}

function flushAll(): void {
  scheduled = false;
  lastFlush = performance.now();
  const streams = [...dirty];
  dirty.clear();
  for (const stream of streams) stream.flush();
}

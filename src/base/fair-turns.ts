/**
 * Fair shares of the event loop for many sessions' runs. A run goes on from one event to the
 * next in microtasks, which Node runs before it looks at any socket again; with 200 sessions
 * whose model answers and tool results arrive together, their continuations ran back to back
 * for hundreds of ms while a `/health` waited. A run asks `fairTurn()` between steps: within
 * the current slice (SLICE_MS since the first ask after the loop last polled) it goes on at
 * once; past it, it waits for a later turn of the loop, so the sockets are polled in between.
 * Waiting runs are let go in arrival order, again SLICE_MS per turn of the loop.
 */
export const SLICE_MS = Number(process.env.VEIL_FAIR_SLICE_MS ?? 10);

const waiting: (() => void)[] = [];
/** performance.now() when the current slice began; -1: none is open. */
let sliceStart = -1;
/** Waiters are being let go (in microtasks); a run that asks meanwhile queues behind them. */
let releasing = false;

/** A slice lasts until the check phase of this turn of the loop, which follows its poll phase. */
function openSlice(now: number): void {
  sliceStart = now;
  setImmediate(endSlice);
}

function endSlice(): void {
  sliceStart = -1;
  if (waiting.length === 0) return;
  openSlice(performance.now());
  releaseNext();
}

/**
 * Lets waiters go while the slice lasts, each in its own microtask after the one before has
 * run its first stretch, so the clock is read between them; the rest wait for the next turn.
 */
function releaseNext(): void {
  releasing = waiting.length > 0 && performance.now() - sliceStart < SLICE_MS;
  if (!releasing) return;
  waiting.shift()!();
  queueMicrotask(releaseNext);
}

/**
 * undefined: go on now. A promise: wait for it (a later turn of the loop). Cheap when the
 * loop is not busy: one clock read.
 */
export function fairTurn(): Promise<void> | undefined {
  if (SLICE_MS <= 0) return undefined;
  const now = performance.now();
  if (sliceStart < 0) {
    openSlice(now);
    return undefined;
  }
  // Within the slice, and nobody waits who would be overtaken.
  if (!releasing && waiting.length === 0 && now - sliceStart < SLICE_MS) return undefined;
  return new Promise<void>((resolve) => waiting.push(resolve));
}

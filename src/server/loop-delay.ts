import { readFileSync, writeFileSync } from "node:fs";

/** Environment variable naming the file a benchmark reads the server's event-loop delays from. */
export const LOOP_DELAY_ENV = "VEIL_BENCH_LOOP_DELAY";
const TICK_MS = 5;

/**
 * How late each TICK_MS timer of the server fired: `[whenUs, lateMs, waitedMs]`, `whenUs` on
 * process.hrtime's clock in µs (CLOCK_MONOTONIC: the same in every process on the machine
 * and in a --cpu-prof), so a benchmark can keep the ticks of its busy window and line the
 * stalls up with a profile; `waitedMs`: how long of it the main thread was runnable but
 * waited for a CPU (other processes had the cores), so the rest is what the server did.
 */
export interface LoopDelayReport {
  ticks: [number, number, number][];
}

/** The main thread's run-queue wait so far in ns (Linux schedstat), 0 where unavailable. */
function runQueueWaitNs(): number {
  try {
    return Number(readFileSync(`/proc/${process.pid}/task/${process.pid}/schedstat`, "utf8").split(" ")[1]) || 0;
  } catch {
    return 0;
  }
}

/**
 * For the benchmarks only (set LOOP_DELAY_ENV to a file path): measures how long the event loop
 * stood still while the server ran, and writes the figures to that file when the server closes.
 * Returns the function that writes them; without the variable it measures nothing.
 */
export function watchLoopDelay(env: NodeJS.ProcessEnv = process.env): () => void {
  const file = env[LOOP_DELAY_ENV];
  if (!file) return () => undefined;
  const ticks: [number, number, number][] = [];
  const tenths = (ms: number) => Math.max(0, Math.round(ms * 10) / 10);
  let last = process.hrtime.bigint();
  let lastWait = runQueueWaitNs();
  const timer = setInterval(() => {
    const now = process.hrtime.bigint();
    const wait = runQueueWaitNs();
    ticks.push([Number(now / 1000n), tenths(Number(now - last) / 1e6 - TICK_MS), tenths((wait - lastWait) / 1e6)]);
    last = now;
    lastWait = wait;
  }, TICK_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    const report: LoopDelayReport = { ticks };
    writeFileSync(file, JSON.stringify(report));
  };
}

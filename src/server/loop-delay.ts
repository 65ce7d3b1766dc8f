import { writeFileSync } from "node:fs";

/** Environment variable naming the file a benchmark reads the server's event-loop delays from. */
export const LOOP_DELAY_ENV = "VEIL_BENCH_LOOP_DELAY";
const TICK_MS = 5;

/**
 * How late each TICK_MS timer of the server fired: `[whenUs, lateMs]` pairs, `whenUs` on
 * process.hrtime's clock in µs (CLOCK_MONOTONIC: the same in every process on the machine
 * and in a --cpu-prof), so a benchmark can keep the ticks of its busy window and line the
 * stalls up with a profile.
 */
export interface LoopDelayReport {
  ticks: [number, number][];
}

/**
 * For the benchmarks only (set LOOP_DELAY_ENV to a file path): measures how long the event loop
 * stood still while the server ran, and writes the figures to that file when the server closes.
 * Returns the function that writes them; without the variable it measures nothing.
 */
export function watchLoopDelay(env: NodeJS.ProcessEnv = process.env): () => void {
  const file = env[LOOP_DELAY_ENV];
  if (!file) return () => undefined;
  const ticks: [number, number][] = [];
  let last = process.hrtime.bigint();
  const timer = setInterval(() => {
    const now = process.hrtime.bigint();
    ticks.push([Number(now / 1000n), Math.max(0, Math.round((Number(now - last) / 1e6 - TICK_MS) * 10) / 10)]);
    last = now;
  }, TICK_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    const report: LoopDelayReport = { ticks };
    writeFileSync(file, JSON.stringify(report));
  };
}

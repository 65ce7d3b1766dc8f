/**
 * Shells of many sessions that start at once take turns. Spawning forks the whole server
 * process (its event loop stands still meanwhile, ~5–25 ms on a 100 MB process), and a
 * hundred `bash -i` reading ~/.bashrc together on two cores can each miss READY_TIMEOUT_MS
 * and be started again. In turns, each start is quick and the event loop runs between them;
 * the order is first come, first served, so no session's first command waits behind later ones.
 */
export const SHELL_STARTS_AT_ONCE = Number(process.env.VEIL_SHELL_STARTS_AT_ONCE) || 4;

const waiting: (() => void)[] = [];
let running = 0;

/** Runs `start` when a slot is free; the slot is released when it settles. */
export async function gatedStart<T>(start: () => Promise<T>): Promise<T> {
  if (running >= SHELL_STARTS_AT_ONCE) await new Promise<void>((resolve) => waiting.push(resolve));
  else running++;
  try {
    // Each spawn in its own turn of the event loop, never several back to back in one.
    await new Promise<void>((resolve) => setImmediate(resolve));
    return await start();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

/**
 * Runs an ES module in `node --max-old-space-size=MB` against the build (dist/), for tests
 * that code works on input far larger than the heap it is given: code that held the input
 * several times over would die with "heap out of memory" instead of answering.
 */
import { execFile } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { existsSync } from "node:fs";

const DIST = fileURLToPath(new URL("../../dist/", import.meta.url));
/** True when the build these runs import exists (npm test builds it first). */
export const distBuilt = existsSync(`${DIST}src/main.js`);

/** `dist/<path>` as an import URL, for the module text given to runWithHeap. */
export function distModule(path: string): string {
  return pathToFileURL(`${DIST}${path}`).href;
}

export interface HeapRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `source` (an ES module; print what the test checks to stdout) with a heap of `heapMb` MB. */
export function runWithHeap(heapMb: number, source: string, timeoutMs = 60_000): Promise<HeapRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [`--max-old-space-size=${heapMb}`, "--input-type=module", "-e", source],
      { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });
}

import { createHash } from "node:crypto";
import type { FileContent } from "../../store/store.js";

/*
 * Content-defined chunking (a gear rolling hash, as FastCDC uses): a cut falls where the
 * hash of the last bytes matches a mask, so an edit moves only the cuts near it and every
 * other chunk of the new version is one the store holds already. A 1 MB file edited on one
 * line costs one or two new chunks (~8 KB each), not a new megabyte.
 */

const MIN_CHUNK = 2 * 1024;
const MAX_CHUNK = 64 * 1024;
/**
 * The top 13 bits: a cut every ~8 KB past the minimum. Bit k of a gear hash depends on the
 * last k + 1 bytes only, so the high bits (the last 32 bytes) are the ones to test; low bits
 * see so little of text that cuts become rare and chunks grow to the maximum.
 */
const CUT_MASK = 0xfff80000;

/** 256 fixed pseudo-random words (xorshift32 from a fixed seed): the same cuts on every node and every run. */
const GEAR = (() => {
  const table = new Uint32Array(256);
  let x = 0x9e3779b9;
  for (let i = 0; i < 256; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    table[i] = x >>> 0;
  }
  return table;
})();

export function sha256(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Where the chunks of `data` end (exclusive offsets, the last one is data.length). */
export function chunkEnds(data: Buffer): number[] {
  const ends: number[] = [];
  let start = 0;
  while (start < data.length) {
    const limit = Math.min(data.length, start + MAX_CHUNK);
    let end = limit;
    let hash = 0;
    for (let i = start + MIN_CHUNK; i < limit; i++) {
      hash = ((hash << 1) + GEAR[data[i]!]!) >>> 0;
      if ((hash & CUT_MASK) === 0) {
        end = i + 1;
        break;
      }
    }
    ends.push(end);
    start = end;
  }
  return ends;
}

/** A file's content as the store keeps it: its hash and its chunks, each addressed by its own hash. */
export function fileContent(data: Buffer): FileContent {
  const chunks: { hash: string; data: Buffer }[] = [];
  let start = 0;
  for (const end of chunkEnds(data)) {
    const part = data.subarray(start, end);
    chunks.push({ hash: sha256(part), data: part });
    start = end;
  }
  return { hash: sha256(data), chunks };
}

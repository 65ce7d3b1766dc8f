import { closeSync, fstatSync, openSync, readSync } from "node:fs";

/** A text file read up to a byte cap. */
export interface BoundedText {
  text: string;
  /** The file's whole size. */
  bytes: number;
  /** True when the file is longer than what `text` holds. */
  truncated: boolean;
}

/**
 * Reads at most `maxBytes` of a file as UTF-8 (a character cut at the cap is dropped), so a
 * huge instructions or skill file costs the cap, never its size. Null when it cannot be read.
 */
export function readBoundedText(path: string, maxBytes: number): BoundedText | null {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return null;
  }
  try {
    const { size } = fstatSync(fd);
    const buffer = Buffer.alloc(Math.min(size, maxBytes));
    let filled = 0;
    while (filled < buffer.length) {
      const n = readSync(fd, buffer, filled, buffer.length - filled, filled);
      if (n === 0) break;
      filled += n;
    }
    const truncated = size > filled;
    let text = buffer.subarray(0, filled).toString("utf8");
    if (truncated) text = text.replace(/\uFFFD+$/, "");
    return { text: text.replace(/^\uFEFF/, ""), bytes: size, truncated };
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

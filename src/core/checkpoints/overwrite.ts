import { closeSync, ftruncateSync, mkdirSync, openSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";

/**
 * Puts `data` into the file at `path` in place: written over from the start, then cut to its
 * length. Opening with O_TRUNC instead makes ext4 flush the file when it is closed (its
 * guard for programs that replace a file by truncating it), which cost about 2 ms a file on a
 * busy disk (a revert of 100 files: 0.2–0.4 s of it). A missing folder is made; a path that
 * cannot be opened for writing (read-only, a folder now) is removed and written anew.
 */
export function overwrite(path: string, data: Buffer, mode: number): void {
  let fd: number;
  try {
    fd = openSync(path, "r+");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") mkdirSync(dirname(path), { recursive: true });
    else rmSync(path, { force: true });
    fd = openSync(path, "w", mode);
  }
  try {
    let written = 0;
    while (written < data.length) written += writeSync(fd, data, written, data.length - written, written);
    ftruncateSync(fd, data.length);
  } finally {
    closeSync(fd);
  }
}

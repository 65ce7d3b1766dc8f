import { stat } from "node:fs/promises";
import { ToolError } from "../../errors.js";
import type { Disposable, ToolContext } from "../types.js";
import { CHAR_CAP, DEFAULT_READ_LINES, renderLines } from "./text-view.js";
import { readLineWindow } from "./line-window.js";

/** Session resource key for the in-memory mtime snapshots. */
export const READ_TRACKER_KEY = "files.readTracker";

/** Differences up to this are the same mtime (coarse file systems, rounding). */
export const MTIME_FUZZ_MS = 10;

/**
 * The in-memory half of the edit safety gates: the mtime each file had when this
 * session last read (or wrote) it, keyed by real path. Lost on restart by design; the
 * DB marker (`store.markRead`) survives, and the two together detect a post-restart edit.
 */
export class ReadTracker implements Disposable {
  private readonly mtimes = new Map<string, number>();

  record(realPath: string, mtimeMs: number): void {
    this.mtimes.set(realPath, mtimeMs);
  }

  get(realPath: string): number | undefined {
    return this.mtimes.get(realPath);
  }

  dispose(): void {
    this.mtimes.clear();
  }
}

export function readTracker(ctx: Pick<ToolContext, "session">): ReadTracker {
  return ctx.session.get(READ_TRACKER_KEY, () => new ReadTracker());
}

/** Records both gates after a read or a write of `realPath`. */
export async function recordRead(ctx: Pick<ToolContext, "session" | "readMarkers">, realPath: string, mtimeMs?: number): Promise<void> {
  const mtime = mtimeMs ?? (await stat(realPath)).mtimeMs;
  readTracker(ctx).record(realPath, mtime);
  await ctx.readMarkers.mark(realPath);
}

/**
 * The must-have-read, post-restart and concurrent-edit gates for changing an existing
 * file. `shown` is the path as the model gave it.
 */
export async function checkWriteGate(ctx: Pick<ToolContext, "session" | "readMarkers">, realPath: string, shown: string): Promise<void> {
  if (!(await ctx.readMarkers.has(realPath))) {
    throw new ToolError("FILE_NOT_READ", `${shown} already exists and has not been read in this session. Read it with read_file first, then retry.`);
  }
  const recorded = readTracker(ctx).get(realPath);
  if (recorded === undefined) {
    throw new ToolError(
      "FILE_NOT_READ",
      `${shown} was read earlier in this session, but the runtime has restarted since and no longer knows which version you saw. Re-read it with read_file, then retry.`,
    );
  }
  const current = await stat(realPath);
  if (Math.abs(current.mtimeMs - recorded) > MTIME_FUZZ_MS) {
    // Read as read_file shows it by default (2000 lines, 30,000 chars): only that much is held.
    const read = await readLineWindow(realPath, { first: 1, last: DEFAULT_READ_LINES, keepChars: CHAR_CAP.max });
    // The model now sees the current version, so its next edit (based on it) may go through.
    await recordRead(ctx, realPath, current.mtimeMs);
    const body = read.totalLines === 0 || read.blank ? "(the file is now empty)" : renderLines(read.lines, {}, read.totalLines);
    throw new ToolError(
      "FILE_CHANGED",
      `File changed on disk since you last read it: ${shown}. Nothing was written. Its current content is below; base your change on it.\n\n${body}`,
    );
  }
}

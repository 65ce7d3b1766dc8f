import { lstatSync, readdirSync } from "node:fs";
import { setImmediate as nextTurn } from "node:timers/promises";
import { join } from "node:path";

/** What a scan records of a file: a change to any of these means its content or mode may have changed. */
export interface FileStamp {
  size: number;
  mtimeMs: number;
  /** chmod, and every write, moves ctime even when a tool puts mtime back. */
  ctimeMs: number;
  ino: number;
  /** Permission bits. */
  mode: number;
}

/** Folders never checkpointed, at any depth: version control, installed packages, Veil's own. */
export const EXCLUDED_DIRS: ReadonlySet<string> = new Set([".git", "node_modules", ".veil"]);

/** Files above this size are not checkpointed (a build artefact or a data set, not an agent's edit). */
export const MAX_TRACKED_BYTES = 32 * 1024 * 1024;

export function stampOf(stat: { size: number; mtimeMs: number; ctimeMs: number; ino: number; mode: number }): FileStamp {
  return { size: stat.size, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs, ino: stat.ino, mode: stat.mode & 0o7777 };
}

export function sameStamp(a: FileStamp, b: FileStamp): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.ino === b.ino && a.mode === b.mode;
}

/**
 * Every regular file under `root` (relative paths with "/"), with its stamp. Symbolic links,
 * sockets and the excluded folders are skipped; so are the folders in `skip` (absolute:
 * Veil's home when it lies inside the workspace, with the tracker's own state). Each folder is read with
 * synchronous calls (a promise per lstat costs several times the syscall, measured in
 * bench/checkpoints.ts) and the loop gets a turn between folders, so other sessions' events
 * wait at most one folder's stats.
 */
export async function scanWorkspace(root: string, skip: ReadonlySet<string> = new Set()): Promise<Map<string, FileStamp>> {
  const found = new Map<string, FileStamp>();
  const walk = async (rel: string): Promise<void> => {
    const dir = rel ? join(root, rel) : root;
    if (skip.has(dir)) return;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return; // removed while we looked
    }
    const subdirs: string[] = [];
    const files: string[] = [];
    for (const entry of entries) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!EXCLUDED_DIRS.has(entry.name)) subdirs.push(path);
      } else if (entry.isFile()) files.push(path);
    }
    for (const path of files) {
      const stat = lstatSync(join(root, path), { throwIfNoEntry: false });
      if (stat?.isFile() && stat.size <= MAX_TRACKED_BYTES) found.set(path, stampOf(stat));
    }
    for (const sub of subdirs) {
      await nextTurn();
      await walk(sub);
    }
  };
  await walk("");
  return found;
}

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

/** What a scan found: every file with its stamp, and every folder it read (relative, "" for the root). */
export interface ScanResult {
  files: Map<string, FileStamp>;
  folders: Set<string>;
}

/**
 * Every regular file under `root/from` (relative paths with "/"), with its stamp. Symbolic
 * links, sockets and the excluded folders are skipped; so are the folders in `skip`
 * (absolute: Veil's home when it lies inside the workspace, with the tracker's own state).
 * `beforeRead` hears each folder before it is read (a watch set then misses nothing). Each
 * folder is read with synchronous calls (a promise per lstat costs several times the
 * syscall, measured in bench/checkpoints.ts) and the loop gets a turn between folders, so
 * other sessions' events wait at most one folder's stats.
 */
export async function scanTree(root: string, skip: ReadonlySet<string>, from = "", beforeRead: (folder: string) => void = () => {}, into: ScanResult = { files: new Map(), folders: new Set() }): Promise<ScanResult> {
  const walk = async (rel: string): Promise<void> => {
    beforeRead(rel);
    const read = readFolder(root, skip, rel);
    if (!read) return;
    into.folders.add(rel);
    for (const [path, stamp] of read.files) into.files.set(path, stamp);
    for (const sub of read.folders) {
      await nextTurn();
      await walk(sub);
    }
  };
  await walk(from);
  return into;
}

/** The files right inside one folder with their stamps, and its subfolders (null: it is gone, or skipped). */
export function readFolder(root: string, skip: ReadonlySet<string>, rel: string): { files: [string, FileStamp][]; folders: string[] } | null {
  const dir = rel ? join(root, rel) : root;
  if (skip.has(dir)) return null;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return null; // removed while we looked
  }
  const folders: string[] = [];
  const files: [string, FileStamp][] = [];
  for (const entry of entries) {
    const path = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (!EXCLUDED_DIRS.has(entry.name) && !skip.has(join(root, path))) folders.push(path);
    } else if (entry.isFile()) {
      const stat = lstatSync(join(root, path), { throwIfNoEntry: false });
      if (stat?.isFile() && stat.size <= MAX_TRACKED_BYTES) files.push([path, stampOf(stat)]);
    }
  }
  return { files, folders };
}

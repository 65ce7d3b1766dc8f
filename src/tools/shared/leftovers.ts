/**
 * What a killed server leaves behind, and how the next server clears it. Two kinds:
 * `.veil-tmp` files of atomic writes cut short (beside their target, anywhere in the
 * workspace) and `veil-shell-*` folders in the temp dir (one per session's shells).
 * Their names carry the owner (host tag and pid), so a leftover is removed only when it
 * is provably dead: its owner pid is gone on this host, or (temp files only) it is older
 * than STALE_MS, far longer than any write takes. A shell folder lives as long as its
 * server, so age proves nothing there: one named by an older version (no pid) is kept.
 */
import { createHash } from "node:crypto";
import { hostname } from "node:os";
import { lstat, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { ALWAYS_SKIPPED_DIRS, SKIPPED_UNLESS_NAMED } from "./file-walk.js";

export const TEMP_FILE_SUFFIX = ".veil-tmp";
export const SHELL_DIR_PREFIX = "veil-shell-";
/** A leftover whose owner cannot be told apart is removed once it is this old. */
export const STALE_MS = 10 * 60_000;

/** 8 hex chars naming this host: a pid means something only on the host it came from. */
const HOST_TAG = createHash("sha256").update(hostname()).digest("hex").slice(0, 8);

/** `.<name>.<host>-<pid>-<random>.veil-tmp`: the temp name of an atomic write of `name`. */
export function tempFileName(name: string, random: string, pid = process.pid): string {
  return `.${name}.${HOST_TAG}-${pid}-${random}${TEMP_FILE_SUFFIX}`;
}

/** Prefix for mkdtemp of a session's shell folder: `veil-shell-<pid>-`. */
export function shellDirPrefix(pid = process.pid): string {
  return `${SHELL_DIR_PREFIX}${pid}-`;
}

export interface LeftoverOptions {
  workspace: string;
  /** Where shell folders are made (os.tmpdir()). */
  tmpDir: string;
  /** default: Date.now */
  now?: () => number;
  /** default: a signal-0 probe */
  isAlive?: (pid: number) => boolean;
}

export interface LeftoverReport {
  files: string[];
  dirs: string[];
}

/** Removes the dead servers' leftovers; never throws (a folder it cannot read is skipped). */
export async function cleanLeftovers(options: LeftoverOptions): Promise<LeftoverReport> {
  const now = options.now ?? Date.now;
  const isAlive = options.isAlive ?? pidAlive;
  const report: LeftoverReport = { files: [], dirs: [] };
  for (const file of await findTempFiles(options.workspace)) {
    if (await deadTempFile(file, now(), isAlive)) {
      await rm(file, { force: true }).then(() => report.files.push(file), () => undefined);
    }
  }
  const entries = await readdir(options.tmpDir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isDirectory() || !entry.name.startsWith(SHELL_DIR_PREFIX)) continue;
    const dir = join(options.tmpDir, entry.name);
    const owner = /^veil-shell-(\d+)-/.exec(entry.name);
    if (owner && !isAlive(Number(owner[1]))) {
      await rm(dir, { recursive: true, force: true }).then(() => report.dirs.push(dir), () => undefined);
    }
  }
  return report;
}

async function deadTempFile(file: string, now: number, isAlive: (pid: number) => boolean): Promise<boolean> {
  const owner = /\.([0-9a-f]{8})-(\d+)-[0-9a-f]+\.veil-tmp$/.exec(file);
  if (owner && owner[1] === HOST_TAG && !isAlive(Number(owner[2]))) return true;
  return olderThan(file, now, STALE_MS);
}

async function olderThan(path: string, now: number, ms: number): Promise<boolean> {
  const stats = await lstat(path).catch(() => undefined);
  return stats !== undefined && now - stats.mtimeMs > ms;
}

/** `.veil-tmp` files under root, without entering .git or node_modules (file tools rarely write there). */
async function findTempFiles(root: string): Promise<string[]> {
  const skip = new Set([...ALWAYS_SKIPPED_DIRS, SKIPPED_UNLESS_NAMED]);
  const found: string[] = [];
  const visit = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    const subdirs: Promise<void>[] = [];
    for (const entry of entries) {
      if (entry.isFile() && entry.name.endsWith(TEMP_FILE_SUFFIX)) found.push(join(dir, entry.name));
      else if (entry.isDirectory() && !skip.has(entry.name)) subdirs.push(visit(join(dir, entry.name)));
    }
    await Promise.all(subdirs);
  };
  await visit(root);
  return found;
}

function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

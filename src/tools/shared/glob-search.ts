import picomatch from "picomatch";
import { stat } from "node:fs/promises";
import { statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join, posix, sep } from "node:path";
import { ToolError } from "../../errors.js";
import { comparePaths, walkFiles } from "./file-walk.js";
import { RG_BASE_ARGS, runRipgrep, stripDotSlash } from "./ripgrep.js";

export interface GlobQuery {
  /** Absolute base folder; results are relative to it. */
  cwd: string;
  pattern: string;
  /** Folder names not entered (see skippedDirs in file-walk.ts). */
  skipDirs: string[];
  /** rg binary, or null for the pure-Node walk. */
  rg: string | null;
  /** How many of the newest matches to return. */
  limit: number;
  /** Matches to leave out entirely (not counted), given their absolute path. */
  exclude?: (absolute: string) => boolean;
  signal?: AbortSignal;
}

export interface GlobMatch {
  /** `/`-separated, relative to cwd. */
  path: string;
  /** Modification time, ms (0 when the file vanished meanwhile). */
  mtime: number;
}

export interface GlobResult {
  /** Every match (after `exclude`). */
  total: number;
  /** The `limit` newest matches, newest first (ties by path, see comparePaths). */
  newest: GlobMatch[];
}

/** Walked paths matched (and stat()ed) between two yields to the event loop in the Node walk. */
const STAT_BATCH = 1000;

/**
 * Files under `cwd` matching `pattern` (picomatch semantics, dotfiles included), as
 * `/`-separated paths relative to `cwd`: how many there are and the `limit` newest.
 * rg only lists candidates (a superset); picomatch decides, so both paths give the
 * same answer. See file-walk.ts for what is walked.
 *
 * Ordering by mtime needs one stat per match, and that stat is most of the cost on a
 * big tree (rg lists files from directory entries without stat). The rg path stats
 * each match as its line arrives, so the stats overlap rg's own walk, and rg is left
 * one core short so the two do not fight over the CPU. Only the top `limit` are kept
 * (a bounded heap), not every match.
 */
export async function globFiles(query: GlobQuery): Promise<GlobResult> {
  const pattern = query.pattern.replace(/^(\.\/)+/, "");
  let matcher: (path: string) => boolean;
  try {
    matcher = picomatch(pattern, { dot: true });
  } catch (error) {
    throw new ToolError("VALIDATION_ERROR", `Invalid glob pattern "${query.pattern}": ${(error as Error).message}`);
  }
  const newest = new NewestFiles(query.limit, query.exclude);
  const scan = picomatch.scan(pattern);
  if (!scan.isGlob) {
    const file = await stat(join(query.cwd, pattern)).catch(() => undefined);
    if (file?.isFile()) newest.add(pattern, join(query.cwd, pattern), file.mtimeMs);
    return newest.result();
  }
  const base = scan.base;
  const root = join(query.cwd, base);
  const rootStats = await stat(root).catch(() => undefined);
  if (!rootStats?.isDirectory()) return newest.result();
  const absolute = absoluteOf(query.cwd, base);
  const consider = (path: string): boolean => {
    if (!matcher(path)) return false;
    const file = absolute(path);
    newest.add(path, file, statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? 0);
    return true;
  };
  if (query.rg) await rgFiles(query.rg, query.cwd, base, pattern, query.skipDirs, consider, query.signal);
  else await nodeFiles(root, base, query.skipDirs, consider, query.signal);
  return newest.result();
}

/**
 * `join(cwd, path)` for the listed paths. Those are `base` plus real entry names, so
 * when `base` needs no normalising neither do they, and plain concatenation gives the
 * same string far cheaper (this runs once per match).
 */
function absoluteOf(cwd: string, base: string): (path: string) => string {
  const clean = sep === "/" && (base === "" || (posix.normalize(base) === base && !/(^|\/)\.\.?(\/|$)/.test(base)));
  if (!clean) return (path) => join(cwd, path);
  const prefix = cwd.endsWith("/") ? cwd : `${cwd}/`;
  return (path) => prefix + path;
}

async function nodeFiles(root: string, base: string, skip: string[], consider: (path: string) => boolean, signal?: AbortSignal): Promise<void> {
  const files = await walkFiles(root, { skipDirs: skip, signal });
  for (let i = 0; i < files.length; i++) {
    if (i > 0 && i % STAT_BATCH === 0) await new Promise((resolve) => setImmediate(resolve));
    consider(base ? `${base}/${files[i]!}` : files[i]!);
  }
}

async function rgFiles(
  binary: string,
  cwd: string,
  base: string,
  pattern: string,
  skip: string[],
  consider: (path: string) => boolean,
  signal?: AbortSignal,
): Promise<void> {
  // One core is left for our stats, which run on this thread while rg walks.
  const threads = Math.max(1, Math.min(12, availableParallelism() - 1));
  const args = [...RG_BASE_ARGS, "--files", "--threads", String(threads)];
  if (rgCanPrefilter(pattern)) args.push("--glob", pattern);
  // rg gives later globs precedence: the exclusions must come after the pattern.
  for (const dir of skip) args.push("--glob", `!${dir}`);
  args.push("--", base || ".");
  let matched = 0;
  const onLine = (line: string) => {
    if (consider(stripDotSlash(line))) matched++;
  };
  const result = await runRipgrep({ binary, args, cwd, signal, onLine });
  if (result.code === 2 && matched === 0 && result.stderr.trim() !== "") {
    throw new ToolError("TOOL_ERROR", `rg failed: ${result.stderr.trim().split("\n")[0]}`);
  }
}

/** Order of the result: newest first, then by path. */
function before(a: GlobMatch, b: GlobMatch): boolean {
  return a.mtime !== b.mtime ? a.mtime > b.mtime : comparePaths(a.path, b.path) < 0;
}

/**
 * Counts matches and keeps the `limit` first in result order: a heap whose root is the
 * last of those kept, so most candidates cost one comparison and no allocation.
 */
class NewestFiles {
  private readonly heap: GlobMatch[] = [];
  private total = 0;

  constructor(
    private readonly limit: number,
    private readonly exclude?: (absolute: string) => boolean,
  ) {}

  add(path: string, absolute: string, mtime: number): void {
    if (this.exclude?.(absolute)) return;
    this.total++;
    const heap = this.heap;
    if (heap.length < this.limit) {
      heap.push({ path, mtime });
      this.siftUp(heap.length - 1);
    } else if (this.limit > 0) {
      const last = heap[0]!;
      if (mtime < last.mtime || (mtime === last.mtime && comparePaths(path, last.path) > 0)) return;
      heap[0] = { path, mtime };
      this.siftDown(0);
    }
  }

  result(): GlobResult {
    const newest = [...this.heap].sort((a, b) => (before(a, b) ? -1 : 1));
    return { total: this.total, newest };
  }

  /** Parent sorts after its children (the root is the last kept). */
  private siftUp(i: number): void {
    const heap = this.heap;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[parent]!, heap[i]!)) return;
      [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
      i = parent;
    }
  }

  private siftDown(i: number): void {
    const heap = this.heap;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) return;
      const right = left + 1;
      const later = right < heap.length && before(heap[left]!, heap[right]!) ? right : left;
      if (!before(heap[i]!, heap[later]!)) return;
      [heap[i], heap[later]] = [heap[later]!, heap[i]!];
      i = later;
    }
  }
}

/**
 * True when rg's own glob is a safe pre-filter: plain characters, `*`, `?`, one level of
 * `{a,b}`. (rg lacks picomatch's ranges, extglobs and nested braces; for those we list
 * every file and let picomatch filter.)
 */
function rgCanPrefilter(pattern: string): boolean {
  if (!/^[A-Za-z0-9_\-./*?{}, @+]+$/.test(pattern) || pattern.includes("..")) return false;
  let depth = 0;
  for (const ch of pattern) {
    if (ch === "{" && ++depth > 1) return false;
    if (ch === "}" && --depth < 0) return false;
  }
  return depth === 0;
}

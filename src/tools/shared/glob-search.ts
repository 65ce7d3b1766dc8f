import picomatch from "picomatch";
import { stat } from "node:fs/promises";
import { statSync } from "node:fs";
import { join } from "node:path";
import { ToolError } from "../../errors.js";
import { walkFiles } from "./file-walk.js";
import { RG_BASE_ARGS, runRipgrep, stripDotSlash } from "./ripgrep.js";

export interface GlobQuery {
  /** Absolute base folder; results are relative to it. */
  cwd: string;
  pattern: string;
  /** Folder names not entered (see skippedDirs in file-walk.ts). */
  skipDirs: string[];
  /** rg binary, or null for the pure-Node walk. */
  rg: string | null;
  signal?: AbortSignal;
}

export interface GlobMatch {
  /** `/`-separated, relative to cwd. */
  path: string;
  /** Modification time, ms (0 when the file vanished meanwhile). */
  mtime: number;
}

/** stat() calls between two yields to the event loop in the Node walk. */
const STAT_BATCH = 1000;

/**
 * Files under `cwd` matching `pattern` (picomatch semantics, dotfiles included), as
 * `/`-separated paths relative to `cwd` with their mtimes, unordered. rg only lists
 * candidates (a superset); picomatch decides, so both paths give the same answer.
 * See file-walk.ts for what is walked.
 *
 * Ordering by mtime needs one stat per match, and that stat is most of the cost on a
 * big tree (rg lists files from directory entries without stat). The rg path stats
 * each match as its line arrives, so the stats overlap rg's own walk.
 */
export async function globFiles(query: GlobQuery): Promise<GlobMatch[]> {
  const pattern = query.pattern.replace(/^(\.\/)+/, "");
  let matcher: (path: string) => boolean;
  try {
    matcher = picomatch(pattern, { dot: true });
  } catch (error) {
    throw new ToolError("VALIDATION_ERROR", `Invalid glob pattern "${query.pattern}": ${(error as Error).message}`);
  }
  const scan = picomatch.scan(pattern);
  if (!scan.isGlob) {
    const file = await stat(join(query.cwd, pattern)).catch(() => undefined);
    return file?.isFile() ? [{ path: pattern, mtime: file.mtimeMs }] : [];
  }
  const base = scan.base;
  const root = join(query.cwd, base);
  const rootStats = await stat(root).catch(() => undefined);
  if (!rootStats?.isDirectory()) return [];
  const skip = query.skipDirs;
  return query.rg
    ? rgFiles(query.rg, query.cwd, base, pattern, matcher, skip, query.signal)
    : nodeFiles(query.cwd, root, base, matcher, skip, query.signal);
}

async function nodeFiles(cwd: string, root: string, base: string, matcher: (path: string) => boolean, skip: string[], signal?: AbortSignal): Promise<GlobMatch[]> {
  const files = await walkFiles(root, { skipDirs: skip, signal });
  const matched = (base ? files.map((rel) => `${base}/${rel}`) : files).filter((path) => matcher(path));
  const out: GlobMatch[] = [];
  for (let i = 0; i < matched.length; i++) {
    if (i > 0 && i % STAT_BATCH === 0) await new Promise((resolve) => setImmediate(resolve));
    out.push({ path: matched[i]!, mtime: mtimeOf(join(cwd, matched[i]!)) });
  }
  return out;
}

function mtimeOf(absolute: string): number {
  return statSync(absolute, { throwIfNoEntry: false })?.mtimeMs ?? 0;
}

async function rgFiles(
  binary: string,
  cwd: string,
  base: string,
  pattern: string,
  matcher: (path: string) => boolean,
  skip: string[],
  signal?: AbortSignal,
): Promise<GlobMatch[]> {
  const args = [...RG_BASE_ARGS, "--files"];
  if (rgCanPrefilter(pattern)) args.push("--glob", pattern);
  // rg gives later globs precedence: the exclusions must come after the pattern.
  for (const dir of skip) args.push("--glob", `!${dir}`);
  args.push("--", base || ".");
  const files: GlobMatch[] = [];
  const onLine = (line: string) => {
    const path = stripDotSlash(line);
    if (matcher(path)) files.push({ path, mtime: mtimeOf(join(cwd, path)) });
  };
  const result = await runRipgrep({ binary, args, cwd, signal, onLine });
  if (result.code === 2 && files.length === 0 && result.stderr.trim() !== "") {
    throw new ToolError("TOOL_ERROR", `rg failed: ${result.stderr.trim().split("\n")[0]}`);
  }
  return files;
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

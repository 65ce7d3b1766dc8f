import { createRequire } from "node:module";
import type Picomatch from "picomatch";

// picomatch is loaded by the first search with an include filter: the module took ~10 ms to
// load, paid by a run's first grep step whether it filtered or not.
const require = createRequire(import.meta.url);
let picomatch: typeof Picomatch | undefined;
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { ToolError } from "../../errors.js";
import { walkFiles } from "./file-walk.js";
import { RG_BASE_ARGS, runRipgrep, stripDotSlash } from "./ripgrep.js";
import { splitLines } from "./text-view.js";
import { GrepMatches, type GrepFile, type GrepLine } from "./grep-matches.js";

export type { GrepFile, GrepLine } from "./grep-matches.js";

export interface GrepQuery {
  /** Absolute folder the search runs from; result paths are relative to it. */
  root: string;
  /** Search only this file (a name inside `root`) instead of walking. */
  file?: string;
  pattern: string;
  caseSensitive: boolean;
  fixedStrings: boolean;
  /** Glob on file names (no `/`) or on paths relative to root (with `/`). Ignored for `file`. */
  include?: string;
  context: number;
  /** false: only the files directly in `root`. */
  recursive: boolean;
  skipDirs: string[];
  /** Files never searched (the runtime's secrets). */
  isProtected(absolute: string): boolean;
  /** rg binary, or null for the pure-Node search. */
  rg: string | null;
  signal?: AbortSignal;
  /** Stop searching after this many characters of line text were found (result marked partial). */
  maxCollectChars: number;
  /** The answer's cap in chars: lines that could not fit in it are counted, not kept. */
  keepChars: number;
  /** Chars the answer adds before each result path. */
  prefixChars?: number;
  /** With rg: a literal pattern over at most this many files (and IN_PROCESS_BYTES) is searched in process. default: 0 */
  inProcessFiles?: number;
}

export interface GrepResult {
  /** The lines the answer can show (see GrepMatches), files in path order. */
  files: GrepFile[];
  /** Matching lines found, shown or not. */
  matches: number;
  /** Files with a line found, shown or not. */
  fileCount: number;
  /** True when collection stopped at maxCollectChars. */
  partial: boolean;
  /** Which search ran. */
  engine: "rg" | "node";
}

/** Bytes a search in process may read when rg is there to take bigger ones. */
const IN_PROCESS_BYTES = 2 * 1024 * 1024;

/** Files the Node search reads between two yields to the event loop. */
const READ_BATCH = 256;

function readQuietly(absolute: string): Buffer | undefined {
  try {
    return readFileSync(absolute);
  } catch {
    return undefined;
  }
}

/**
 * rg when available, else the Node search. A pattern rg's regex engine rejects but
 * JavaScript accepts (look-around, backreferences) runs on the Node search instead.
 */
export async function grepSearch(query: GrepQuery): Promise<GrepResult> {
  if (!query.rg) return nodeSearch(query, await searchPaths(query));
  // Starting rg takes a few milliseconds, more than searching a small tree here does. Only
  // for a literal: a regex may mean something else to JavaScript than to rg (`\d`, `[[:alpha:]]`).
  const small = (query.inProcessFiles ?? 0) > 0 && isLiteral(query) ? await searchPaths(query, query.inProcessFiles) : undefined;
  if (small) {
    const found = await nodeSearch(query, small, IN_PROCESS_BYTES);
    if (found) return found;
  }
  try {
    return await rgSearch(query, query.rg);
  } catch (error) {
    if (!(error instanceof ToolError) || error.code !== "VALIDATION_ERROR") throw error;
    try {
      compilePattern(query.pattern, query.fixedStrings, query.caseSensitive);
    } catch {
      throw error;
    }
    return nodeSearch(query, await searchPaths(query));
  }
}

/** A pattern that means the same to every regex engine: fixed strings, or no metacharacter in it. */
function isLiteral(query: Pick<GrepQuery, "pattern" | "fixedStrings">): boolean {
  return query.fixedStrings || !/[.*+?^${}()|[\]\\]/.test(query.pattern);
}

/** The files the query searches (relative to root, protected ones left out); undefined when there are more than `limit`. */
async function searchPaths(query: GrepQuery, limit?: number): Promise<string[] | undefined> {
  let paths: string[];
  if (query.file) {
    paths = [query.file];
  } else {
    const all = await walkFiles(query.root, { skipDirs: query.skipDirs, maxDepth: query.recursive ? undefined : 1, signal: query.signal, limit });
    if (limit !== undefined && all.length > limit) return undefined;
    paths = query.include ? all.filter(includeMatcher(query.include)) : all;
  }
  return paths.filter((path) => !query.isProtected(join(query.root, path)));
}

/** The JS RegExp the Node search uses; also validates a pattern. Throws VALIDATION_ERROR. */
export function compilePattern(pattern: string, fixedStrings: boolean, caseSensitive: boolean): RegExp {
  const source = fixedStrings ? pattern.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") : pattern;
  const flags = caseSensitive ? "" : "i";
  try {
    return new RegExp(source, `${flags}u`);
  } catch {
    try {
      return new RegExp(source, flags);
    } catch (error) {
      throw new ToolError("VALIDATION_ERROR", `Invalid regular expression "${pattern}": ${(error as Error).message}. Fix the pattern, or set fixed_strings to search for it literally.`);
    }
  }
}

async function rgSearch(query: GrepQuery, binary: string): Promise<GrepResult> {
  const args = [...RG_BASE_ARGS, "--null", "--line-number", "--with-filename", "--no-heading", "--crlf"];
  args.push(query.caseSensitive ? "--case-sensitive" : "--ignore-case");
  if (query.fixedStrings) args.push("--fixed-strings");
  if (query.context > 0) args.push("--context", String(query.context));
  if (!query.file) {
    if (query.include) args.push("--glob", query.include);
    if (!query.recursive) args.push("--max-depth", "1");
  }
  // rg gives later globs precedence: the exclusions must come after the include glob.
  for (const dir of query.skipDirs) args.push("--glob", `!${dir}`);
  args.push("--regexp", query.pattern, "--", query.file ?? ".");

  const found = new GrepMatches(query.keepChars, query.prefixChars);
  const allowed = new Map<string, boolean>();
  let collected = 0;
  let partial = false;
  const result = await runRipgrep({
    binary,
    args,
    cwd: query.root,
    signal: query.signal,
    onLine(line) {
      const nul = line.indexOf("\0");
      if (nul === -1) return; // `--` separators and "binary file matches" notes
      const path = stripDotSlash(line.slice(0, nul));
      const head = /^(\d+)([:-])/.exec(line.slice(nul + 1, nul + 24));
      if (!head) return;
      let searchable = allowed.get(path);
      if (searchable === undefined) {
        searchable = !query.isProtected(join(query.root, path));
        allowed.set(path, searchable);
      }
      if (!searchable) return;
      let text = line.slice(nul + 1 + head[0].length);
      if (text.endsWith("\r")) text = text.slice(0, -1);
      found.add(path, Number(head[1]), text, head[2] === ":");
      collected += text.length + path.length + 8;
      if (collected > query.maxCollectChars) {
        partial = true;
        return false;
      }
    },
  });
  if (result.code === 2 && found.fileCount === 0 && !result.stopped) {
    const message = result.stderr.trim();
    if (/regex parse error|error parsing regex|unclosed|unrecognized escape/i.test(message)) {
      throw new ToolError("VALIDATION_ERROR", `Invalid regular expression "${query.pattern}": ${message}. Fix the pattern, or set fixed_strings to search for it literally.`);
    }
    if (message) throw new ToolError("TOOL_ERROR", `rg failed: ${message.split("\n")[0]}`);
  }
  return { files: found.files, matches: found.matches, fileCount: found.fileCount, partial, engine: "rg" };
}

/** The search in JavaScript over `paths`; with `maxBytes`, undefined once the files hold more than that. */
async function nodeSearch(query: GrepQuery, paths: string[], maxBytes: number): Promise<GrepResult | undefined>;
async function nodeSearch(query: GrepQuery, paths: string[] | undefined): Promise<GrepResult>;
async function nodeSearch(query: GrepQuery, paths: string[] = [], maxBytes?: number): Promise<GrepResult | undefined> {
  const regex = compilePattern(query.pattern, query.fixedStrings, query.caseSensitive);
  let bytes = 0;
  const found = new GrepMatches(query.keepChars, query.prefixChars);
  let collected = 0;
  let partial = false;
  // Synchronous reads in small batches: about twice as fast as fs.promises.readFile for
  // many small files, and the yield between batches keeps the event loop responsive.
  for (let i = 0; i < paths.length && !partial && !query.signal?.aborted; i++) {
    if (i > 0 && i % READ_BATCH === 0) await new Promise((resolve) => setImmediate(resolve));
    const path = paths[i]!;
    if (maxBytes !== undefined) {
      bytes += statSync(join(query.root, path), { throwIfNoEntry: false })?.size ?? 0;
      if (bytes > maxBytes) return undefined;
    }
    const buffer = readQuietly(join(query.root, path));
    if (!buffer || buffer.includes(0)) continue; // unreadable or binary, as rg skips it
    const lines = searchLines(splitLines(buffer.toString("utf8")), regex, query.context);
    for (const line of lines) {
      found.add(path, line.n, line.text, line.match);
      collected += line.text.length + path.length + 8;
    }
    if (collected > query.maxCollectChars) partial = true;
  }
  return { files: found.files, matches: found.matches, fileCount: found.fileCount, partial, engine: "node" };
}

/** `*.ts` matches a file name at any depth (as rg and grep --include do); `src/*.ts` a relative path. */
function includeMatcher(include: string): (path: string) => boolean {
  picomatch ??= require("picomatch") as typeof Picomatch;
  const match = picomatch(include, { dot: true, basename: !include.includes("/") });
  return (path) => match(path);
}

/** Matching lines plus `context` lines around each, merged, in order. */
function searchLines(lines: string[], regex: RegExp, context: number): GrepLine[] {
  const hits: number[] = [];
  for (let i = 0; i < lines.length; i++) if (regex.test(lines[i]!)) hits.push(i);
  if (hits.length === 0) return [];
  if (context === 0) return hits.map((i) => ({ n: i + 1, text: lines[i]!, match: true }));
  const isHit = new Set(hits);
  const out: GrepLine[] = [];
  let shownUpTo = -1;
  for (const hit of hits) {
    const from = Math.max(hit - context, shownUpTo + 1);
    const to = Math.min(lines.length - 1, hit + context);
    for (let i = from; i <= to; i++) out.push({ n: i + 1, text: lines[i]!, match: isHit.has(i) });
    shownUpTo = Math.max(shownUpTo, to);
  }
  return out;
}

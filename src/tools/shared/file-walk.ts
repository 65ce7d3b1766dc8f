import { readdir } from "node:fs/promises";
import { join } from "node:path";

/**
 * What glob and grep search (both the rg path and the pure-Node fallback, which must
 * agree): hidden files are included; .gitignore/.ignore files are NOT respected (the
 * result must not depend on VCS state, and the fallback cannot reimplement them
 * faithfully); `.git/` is never entered; `node_modules/` is skipped unless the search
 * root is inside one or the glob pattern names it; symlinks are not followed (rg's
 * default: symlinked files and folders are left out while walking).
 */
export const ALWAYS_SKIPPED_DIRS = [".git"];
export const SKIPPED_UNLESS_NAMED = "node_modules";

/** Directory names to skip for a search rooted at `rootPath` (as shown: workspace-relative, or absolute outside it). */
export function skippedDirs(rootPath: string, pattern = ""): string[] {
  const named = rootPath.split(/[\\/]/).includes(SKIPPED_UNLESS_NAMED) || pattern.includes(SKIPPED_UNLESS_NAMED);
  return named ? [...ALWAYS_SKIPPED_DIRS] : [...ALWAYS_SKIPPED_DIRS, SKIPPED_UNLESS_NAMED];
}

export interface WalkOptions {
  /** Names of folders not to enter (matched at any depth). */
  skipDirs: string[];
  /** 1 = only the root's own files. default: unlimited */
  maxDepth?: number;
  signal?: AbortSignal;
  /** Stop once more than this many files were found (the answer then holds limit + 1). */
  limit?: number;
}

/** Regular files below `root`, as `/`-separated paths relative to it (unordered). */
export async function walkFiles(root: string, options: WalkOptions): Promise<string[]> {
  const skip = new Set(options.skipDirs);
  const maxDepth = options.maxDepth ?? Number.POSITIVE_INFINITY;
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const files: string[] = [];
  const visit = async (dir: string, prefix: string, depth: number): Promise<void> => {
    if (options.signal?.aborted || files.length > limit) return;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    const subdirs: Promise<void>[] = [];
    for (const entry of entries) {
      if (files.length > limit) break;
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isFile()) files.push(rel);
      else if (entry.isDirectory() && depth < maxDepth && !skip.has(entry.name)) {
        subdirs.push(visit(join(dir, entry.name), rel, depth + 1));
      }
    }
    await Promise.all(subdirs);
  };
  await visit(root, "", 1);
  return files;
}

/**
 * Orders paths the way a directory walk sorted by name would (component by component,
 * by UTF-16 code unit), so `a/b` comes before `a.txt`. Works on `/` or platform
 * separators. Compares in place (no splitting): it runs for every tie in glob's order.
 */
export function comparePaths(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca === cb) continue;
    const sepA = ca === SLASH || ca === BACKSLASH;
    const sepB = cb === SLASH || cb === BACKSLASH;
    if (sepA && sepB) continue;
    // A component that ends first is a prefix of the other one, so it sorts first;
    // a folder's contents come where the folder's name sorts.
    if (sepA) return -1;
    if (sepB) return 1;
    return ca < cb ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

const SLASH = 47;
const BACKSLASH = 92;

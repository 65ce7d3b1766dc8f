import { lstat, realpath, stat } from "node:fs/promises";
import { realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { ToolError } from "../../errors.js";
import type { ToolContext } from "../types.js";
import { realpathOrNull } from "./folders.js";

/**
 * Where the file tools may read and write.
 *
 * Paths: a tool path is absolute, or relative to the workspace root.
 *
 * Reads (read_file, list_dir, glob, grep) may go anywhere the process can read, except
 * the runtime's secrets: `<workspace>/.veil/secret` and the SQLite files
 * `<workspace>/.veil/veil.db*` (plus the configured `paths.secretPath` / `paths.dbPath`).
 * read_file refuses them with PATH_PROTECTED; grep skips them silently.
 *
 * Writes (write_file, edit_file) may only land inside the workspace or one of the
 * folders in `settings.files.writeRoots`; anything else is PATH_OUTSIDE_WORKSPACE.
 * The check runs on the real location at write time: the path is resolved through
 * every symlink (for a file that does not exist yet, the nearest existing ancestor
 * is resolved and the rest appended), so a symlink cannot smuggle a write outside.
 * Writes pass through a symlink to its target (the link stays a link); a broken
 * symlink (or a symlink loop) anywhere on the way is refused with BROKEN_SYMLINK.
 *
 * The runtime's own files are never writable by file tools (PATH_PROTECTED), checked
 * on both the path as given and its real location, under `<workspace>/.veil/` and
 * under `$VEIL_HOME/`:
 *   `agents/**`, `tools/**`, `settings.json`, `models.json`, `veil.db*`, `secret`.
 * Other `.veil/` content (e.g. `memory/`) stays writable.
 */
export interface PathPolicy {
  /** Absolute workspace root. */
  workspace: string;
  /** Extra roots where writes are allowed (settings.files.writeRoots). */
  writeRoots: string[];
  /** Folders laid out like `<workspace>/.veil` (the project dir and $VEIL_HOME). */
  runtimeDirs: string[];
  /** Exact files that are secret (read and write protected). */
  secretFiles: string[];
}

/** Runtime resource key: the protected paths' real locations, resolved once per runtime. */
export const REAL_PATHS_KEY = "files.realPaths";

/**
 * Real locations of the runtime's own folders and files, each resolved on first use and kept
 * for the runtime's life: the runtime holds them (its database is open, its folders are where
 * it was started), so they do not move under it, and a tool call need not walk every one of
 * them through the file system again.
 */
export class RealPathCache {
  private readonly known = new Map<string, string[]>();

  /** Each path plus its real path (when it differs); for a missing file, its folder's real path and its name. */
  expand(paths: readonly string[]): string[] {
    const out = new Set<string>();
    for (const path of paths) {
      let real = this.known.get(path);
      if (!real) {
        real = protectedForms(path);
        this.known.set(path, real);
      }
      for (const form of real) out.add(form);
    }
    return [...out];
  }

  dispose(): void {
    this.known.clear();
  }
}

export function pathPolicyFromContext(ctx: Pick<ToolContext, "workspace" | "settings" | "paths"> & Partial<Pick<ToolContext, "runtime">>): PathPolicy {
  const paths = ctx.paths;
  const runtimeDirs = [join(ctx.workspace, ".veil")];
  if (paths?.projectDir) runtimeDirs.push(paths.projectDir);
  if (paths?.homeDir) runtimeDirs.push(paths.homeDir);
  const secretFiles: string[] = [];
  if (paths?.secretPath) secretFiles.push(paths.secretPath);
  if (paths?.dbPath) secretFiles.push(paths.dbPath, `${paths.dbPath}-wal`, `${paths.dbPath}-shm`, `${paths.dbPath}-journal`);
  const expand = ctx.runtime ? (list: string[]) => ctx.runtime!.get(REAL_PATHS_KEY, () => new RealPathCache()).expand(list) : expandReal;
  return {
    workspace: ctx.workspace,
    writeRoots: (ctx.settings?.files?.writeRoots ?? []).map((root) => resolve(ctx.workspace, root)),
    runtimeDirs: expand(runtimeDirs),
    secretFiles: expand(secretFiles),
  };
}

/** Absolute, normalised path for a tool argument (absolute, or relative to the workspace). */
export function resolveToolPath(workspace: string, input: string): string {
  if (input.trim() === "") throw new ToolError("VALIDATION_ERROR", "path must not be empty");
  return isAbsolute(input) ? resolve(input) : resolve(workspace, input);
}

/** How to show a path to the model: workspace-relative when inside it, else absolute. */
export function displayPath(workspace: string, absolute: string): string {
  const rel = relative(workspace, absolute);
  if (rel === "") return ".";
  return isInside(rel) ? rel : absolute;
}

/** True when `child` (absolute) is `parent` or below it. */
export function isWithin(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel === "" || isInside(rel);
}

function isInside(rel: string): boolean {
  return rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

/** A secret the file tools must not read (exact path; checks the given and the real path). */
export function isReadProtected(policy: PathPolicy, ...candidates: string[]): boolean {
  return candidates.some((path) => policy.secretFiles.includes(path) || readRule(policy, path));
}

function readRule(policy: PathPolicy, path: string): boolean {
  return policy.runtimeDirs.some((dir) => {
    if (dirname(path) !== dir) return false;
    const name = basename(path);
    return name === "secret" || name.startsWith("veil.db");
  });
}

/** A runtime file the file tools must not write. */
export function isWriteProtected(policy: PathPolicy, ...candidates: string[]): boolean {
  return candidates.some((path) => {
    if (isReadProtected(policy, path)) return true;
    return policy.runtimeDirs.some((dir) => {
      if (!isWithin(dir, path) || path === dir) return false;
      const [first, ...rest] = relative(dir, path).split(sep);
      if (first === "agents" || first === "tools") return true;
      return rest.length === 0 && (first === "settings.json" || first === "models.json");
    });
  });
}

/** Refuses a read of a secret; returns the real path when the file exists. */
export async function guardRead(policy: PathPolicy, absolute: string): Promise<string | undefined> {
  // Synchronous: a handful of lstat calls, where realpath's trip through the thread pool cost more.
  const real = realpathOrNull(absolute) ?? undefined;
  if (isReadProtected(policy, absolute, ...(real ? [real] : []))) {
    throw new ToolError("PATH_PROTECTED", `${absolute} holds the runtime's secrets and cannot be read by file tools.`);
  }
  return real;
}

export interface WriteTarget {
  /** The path as the model gave it, made absolute. */
  requested: string;
  /** Where the bytes will land (symlinks resolved). */
  real: string;
  /** True when the destination exists (as a regular file, or something else). */
  exists: boolean;
}

/**
 * Resolves a write destination to its real location and applies the write policy.
 * Throws BROKEN_SYMLINK, PATH_OUTSIDE_WORKSPACE or PATH_PROTECTED.
 */
export async function guardWrite(policy: PathPolicy, absolute: string): Promise<WriteTarget> {
  const real = await realLocation(absolute);
  const roots = expandReal([policy.workspace, ...policy.writeRoots]);
  if (!roots.some((root) => isWithin(root, real.path))) {
    const allowed = [policy.workspace, ...policy.writeRoots].join(", ");
    const via = real.path === absolute ? "" : ` (it resolves to ${real.path})`;
    throw new ToolError(
      "PATH_OUTSIDE_WORKSPACE",
      `${absolute}${via} is outside the folders file tools may write: ${allowed}. Add the folder to settings files.writeRoots to allow it.`,
    );
  }
  if (isWriteProtected(policy, absolute, real.path)) {
    throw new ToolError("PATH_PROTECTED", `${absolute} is one of the runtime's own files (agents, tools, settings, models, database, secret) and cannot be changed by file tools.`);
  }
  return { requested: absolute, real: real.path, exists: real.exists };
}

/** The real path of `absolute`, or of its nearest existing ancestor plus the missing tail. */
async function realLocation(absolute: string): Promise<{ path: string; exists: boolean }> {
  const tail: string[] = [];
  let current = absolute;
  for (;;) {
    const link = await lstat(current).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT" || error.code === "ENOTDIR") return undefined;
      throw error;
    });
    if (link) {
      if (link.isSymbolicLink()) {
        const target = await stat(current).catch(() => undefined);
        if (!target) {
          throw new ToolError("BROKEN_SYMLINK", `${current} is a broken symbolic link (its target does not exist or loops); refusing to replace it with a regular file.`);
        }
      }
      const base = await realpath(current);
      return { path: tail.length ? join(base, ...tail.reverse()) : base, exists: tail.length === 0 };
    }
    const parent = dirname(current);
    if (parent === current) return { path: absolute, exists: false };
    tail.push(basename(current));
    current = parent;
  }
}

/** Each path plus its real path (when it exists and differs). */
function expandReal(paths: string[]): string[] {
  const out = new Set<string>();
  for (const path of paths) {
    const absolute = resolve(path);
    out.add(absolute);
    try {
      out.add(realpathSync(absolute));
    } catch {
      // Not there yet: the lexical path is all we can guard.
    }
  }
  return [...out];
}

/**
 * A protected path and where it really is: its real path, or for a file not there yet (the
 * secret before the first key, the database's -journal) its folder's real path and its name,
 * which is where the file will be once it is created.
 */
function protectedForms(path: string): string[] {
  const absolute = resolve(path);
  const forms = new Set([absolute]);
  try {
    forms.add(realpathSync(absolute));
  } catch {
    try {
      forms.add(join(realpathSync(dirname(absolute)), basename(absolute)));
    } catch {
      // Its folder is not there either: the lexical path is all we can guard.
    }
  }
  return [...forms];
}

import { randomBytes } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import { mkdir, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { VeilError } from "../../errors.js";
import type { Disposable } from "../types.js";
import { readSlice } from "./memory-scan.js";

/**
 * Memory files: path resolution that cannot escape the memory folder, the entry
 * format, and writes that are safe against other sessions and other processes.
 *
 * Concurrency: every write to a memory file (append or overwrite) runs
 *   1. inside the process, behind a promise-chain lock keyed by the absolute path
 *      (`MemoryLocks`, kept in the runtime scope), and
 *   2. across processes, under an exclusive lock file `<file>.lock` created with
 *      `open(…, "wx")` and retried with backoff; a lock older than STALE_LOCK_MS
 *      or held by a dead pid on this host is broken.
 * Under the lock an append reads the file, checks the last entry, and appends with
 * one O_APPEND write; an overwrite writes a temp file and renames it over.
 */

export const MEMORY_FILE_NAME = "MEMORY.md";
const MAX_NAME_LENGTH = 128;
const SAFE_NAME = /^[\p{L}\p{N}_][\p{L}\p{N}_.\- ]*$/u;
const LOCK_RETRY_MS = 5;
const LOCK_RETRY_MAX_MS = 100;
const LOCK_TIMEOUT_MS = 30_000;
const STALE_LOCK_MS = 30_000;

/** Checks one path segment (a file or agent name) and says what is wrong with it. */
function nameProblem(name: unknown, what: string): string | null {
  if (typeof name !== "string" || name.length === 0) return `${what} must be a non-empty name`;
  if (name.length > MAX_NAME_LENGTH) return `${what} is longer than ${MAX_NAME_LENGTH} characters`;
  if (name.includes("\0")) return `${what} contains a NUL byte`;
  if (name.includes("%")) {
    let decoded = name;
    try {
      decoded = decodeURIComponent(name);
    } catch {
      /* keep the raw spelling */
    }
    return `${what} contains percent-encoded characters (decodes to "${decoded.replace(/\0/g, "\\0")}"); give the plain name`;
  }
  if (name.includes("/") || name.includes("\\")) return `${what} must not contain path separators`;
  if (name.includes("..")) return `${what} must not contain ".."`;
  if (name.startsWith(".")) return `${what} must not start with a dot`;
  if (isAbsolute(name) || /^[A-Za-z]:/.test(name)) return `${what} must not be an absolute path`;
  if (/[.\s]$/.test(name)) return `${what} must not end with a dot or a space`;
  if (!SAFE_NAME.test(name)) return `${what} may only use letters, digits, "_", "-", "." and spaces`;
  if (name.endsWith(".lock") || /\.tmp-/.test(name)) return `${what} uses a reserved suffix`;
  return null;
}

/**
 * The absolute path of a memory file: `<memoryDir>/<file>` (global) or
 * `<memoryDir>/agents/<agent>/<file>`. Throws VALIDATION_ERROR for any file or
 * agent name that could reach outside the memory folder.
 */
export function resolveMemoryFile(memoryDir: string, file: string, agent?: string): string {
  const fileProblem = nameProblem(file, "memory file name");
  if (fileProblem) throw new VeilError("VALIDATION_ERROR", `${fileProblem}: ${JSON.stringify(file)}`);
  const root = resolve(memoryDir);
  let target: string;
  if (agent === undefined) {
    target = resolve(root, file);
  } else {
    const agentProblem = nameProblem(agent, "agent name");
    if (agentProblem) throw new VeilError("VALIDATION_ERROR", `${agentProblem}: ${JSON.stringify(agent)}`);
    target = resolve(root, "agents", agent, file);
  }
  const rel = relative(root, target);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel) || rel.split(sep).includes("..")) {
    throw new VeilError("VALIDATION_ERROR", `memory path escapes the memory folder: ${JSON.stringify(file)}`);
  }
  return target;
}

/** The MEMORY.md of a scope: the agent's own or the workspace-wide one. */
export function memoryPathForScope(memoryDir: string, scope: "agent" | "global", agentName: string): string {
  return scope === "global" ? resolveMemoryFile(memoryDir, MEMORY_FILE_NAME) : resolveMemoryFile(memoryDir, MEMORY_FILE_NAME, agentName);
}

/** The file's text, or null when it does not exist. */
export async function readMemoryFile(path: string): Promise<string | null> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

/**
 * Replaces the file with `content` exactly (no dedup, no empty guard): temp file in
 * the same folder, then rename, under the cross-process lock file.
 */
export async function writeMemoryFileAtomic(path: string, content: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await withFileLock(path, async () => {
    const temp = `${path}.tmp-${process.pid}-${randomBytes(6).toString("hex")}`;
    try {
      await writeFile(temp, content, { encoding: "utf8", flag: "wx" });
      await rename(temp, path);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  });
}

// ---- entry format -------------------------------------------------------------

/** `## <ISO timestamp>` on its own line opens an entry. */
const HEADER = /^## (\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)$/;
/** A content line that would read as a header is written with leading backslashes, one more each time. */
const ESCAPED_HEADER = /^(\\+)(## \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)$/;

export interface MemoryEntry {
  /** ISO time of the write; null for text before the first header (hand-written files). */
  timestamp: string | null;
  content: string;
}

function escapeContent(content: string): string {
  return content
    .split("\n")
    .map((line) => (HEADER.test(line) || ESCAPED_HEADER.test(line) ? `\\${line}` : line))
    .join("\n");
}

function unescapeLine(line: string): string {
  const m = ESCAPED_HEADER.exec(line);
  return m ? `${m[1]!.slice(1)}${m[2]}` : line;
}

/** One entry as it is appended: header, content, blank line. */
export function formatEntry(timestamp: string, content: string): string {
  return `## ${timestamp}\n${escapeContent(content)}\n\n`;
}

/** Splits a memory file into entries (inverse of formatEntry, tolerant of hand edits). */
export function parseEntries(text: string): MemoryEntry[] {
  const entries: MemoryEntry[] = [];
  const lines = text.split("\n");
  let timestamp: string | null = null;
  let body: string[] = [];
  const flush = () => {
    const content = body.join("\n").trim();
    if (timestamp !== null || content.length > 0) entries.push({ timestamp, content });
  };
  for (const line of lines) {
    const header = HEADER.exec(line.endsWith("\r") ? line.slice(0, -1) : line);
    if (header) {
      flush();
      timestamp = header[1]!;
      body = [];
    } else {
      body.push(unescapeLine(line));
    }
  }
  flush();
  return entries;
}

/** The last entry without parsing the whole file (the dedup check runs under the lock). */
export function lastEntry(text: string): MemoryEntry | undefined {
  const header = /^## \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\r?$/gm;
  let start = -1;
  for (let m = header.exec(text); m; m = header.exec(text)) start = m.index;
  return parseEntries(start < 0 ? text : text.slice(start)).at(-1);
}

// ---- writes -----------------------------------------------------------------

export type AppendResult =
  | { status: "skipped_duplicate"; filePath: string }
  | { status: "written" | "appended"; filePath: string; timestamp: string };

/** Read past the new entry's own length when looking for a duplicate of it (blank lines, a CR per line). */
const DEDUP_SLACK_BYTES = 4096;

/**
 * Appends `content` (already trimmed, non-empty) as a new entry unless it equals
 * the last entry byte for byte. Runs under the cross-process lock; callers add the
 * in-process lock (MemoryLocks) around it.
 */
export async function appendMemoryEntry(path: string, content: string, timestamp: string): Promise<AppendResult> {
  await mkdir(dirname(path), { recursive: true });
  const entry = formatEntry(timestamp, content);
  return withFileLock(path, async () => {
    // Only the end of the file can hold an entry equal to this one: read that much, not the whole file.
    const tail = (await readSlice(path, Buffer.byteLength(entry) + DEDUP_SLACK_BYTES)) ?? { text: "", fromStart: true, size: 0 };
    const existing = tail.text;
    const last = lastEntry(existing);
    if (last && last.content === content && (tail.fromStart || last.timestamp !== null)) return { status: "skipped_duplicate", filePath: path };
    const separator = tail.size === 0 || existing.endsWith("\n\n") ? "" : existing.endsWith("\n") ? "\n" : "\n\n";
    const handle = await open(path, fsConstants.O_WRONLY | fsConstants.O_APPEND | fsConstants.O_CREAT, 0o644);
    try {
      await handle.write(separator + entry);
    } finally {
      await handle.close();
    }
    return { status: tail.fromStart && existing.trim().length === 0 ? "written" : "appended", filePath: path, timestamp };
  });
}

/** Serialises work per key inside one process: each call waits for the previous one. */
export class MemoryLocks implements Disposable {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(work, work);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    try {
      return await result;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  dispose(): void {
    this.tails.clear();
  }
}

export const MEMORY_LOCKS_KEY = "memory.locks";

/** Holds `<path>.lock` (created exclusively) while `work` runs. */
export async function withFileLock<T>(path: string, work: () => Promise<T>): Promise<T> {
  const lockPath = `${path}.lock`;
  const started = Date.now();
  let wait = LOCK_RETRY_MS;
  for (;;) {
    try {
      const handle = await open(lockPath, "wx", 0o644);
      try {
        await handle.write(`${process.pid}@${hostname()}\n`);
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      if (await breakStaleLock(lockPath)) continue;
      if (Date.now() - started > LOCK_TIMEOUT_MS) {
        throw new VeilError("CONFLICT", `memory file is locked by another writer (${lockPath}); try again`);
      }
      await delay(wait);
      wait = Math.min(wait * 2, LOCK_RETRY_MAX_MS);
    }
  }
  try {
    return await work();
  } finally {
    await rm(lockPath, { force: true });
  }
}

/** Removes a lock left behind by a crashed writer; true when it did. */
async function breakStaleLock(lockPath: string): Promise<boolean> {
  try {
    const [info, owner] = await Promise.all([stat(lockPath), readFile(lockPath, "utf8")]);
    const [pidText, host] = owner.trim().split("@");
    const pid = Number(pidText);
    const deadHere = host === hostname() && Number.isInteger(pid) && pid > 0 && !processAlive(pid);
    if (deadHere || Date.now() - info.mtimeMs > STALE_LOCK_MS) {
      await rm(lockPath, { force: true });
      return true;
    }
  } catch {
    /* gone already, or half-written by its owner: retry */
  }
  return false;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

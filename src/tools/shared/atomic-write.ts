import { open, rename, rm, mkdir, stat, type FileHandle } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { basename, dirname, join } from "node:path";
import { ToolError } from "../../errors.js";
import { tempFileName } from "./leftovers.js";

export interface AtomicWriteOptions {
  /** File mode for the result; default: the existing file's mode, else 0o666 minus umask. */
  mode?: number;
  /** Create missing parent folders. default: true */
  createParents?: boolean;
}

/** Text is encoded and written this many chars at a time (at most 1 MB of UTF-8), not as one Buffer the size of the file. */
export const WRITE_SLICE_CHARS = 256 * 1024;

/**
 * Writes `data` (a string, a Buffer, or strings to write one after another) to `target` so
 * the destination is either untouched or fully replaced:
 * a temp file opened exclusively (`wx`) in the same folder, full write, fsync, rename.
 * The temp file is removed on any failure, so a full disk leaves the old content and
 * no debris. `target` must already be the real path (symlinks resolved by the caller).
 */
export async function atomicWrite(target: string, data: string | Buffer | readonly string[], options: AtomicWriteOptions = {}): Promise<void> {
  const dir = dirname(target);
  if (options.createParents ?? true) await mkdir(dir, { recursive: true }).catch((error) => rethrow(error, dir));
  const existing = await stat(target).catch(() => undefined);
  const mode = options.mode ?? (existing ? existing.mode & 0o7777 : undefined);
  // Named after its owner, so a server killed mid-write has its leftover cleared at the next start.
  const temp = join(dir, tempFileName(basename(target), randomBytes(6).toString("hex")));
  let handle: FileHandle | undefined;
  try {
    handle = await open(temp, "wx", mode ?? 0o666);
    if (Buffer.isBuffer(data)) await handle.writeFile(data);
    else for (const part of typeof data === "string" ? [data] : data) await writeText(handle, part);
    // open() applies the umask; an existing file's mode must survive exactly.
    if (mode !== undefined) await handle.chmod(mode);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temp, target);
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await rm(temp, { force: true }).catch(() => undefined);
    rethrow(error, target);
  }
  await syncDir(dir);
}

/** `text` in slices of WRITE_SLICE_CHARS, never splitting a surrogate pair. */
async function writeText(handle: FileHandle, text: string): Promise<void> {
  for (let start = 0; start < text.length; ) {
    let end = Math.min(text.length, start + WRITE_SLICE_CHARS);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end++;
    const bytes = Buffer.from(text.slice(start, end), "utf8");
    for (let written = 0; written < bytes.length; ) written += (await handle.write(bytes, written)).bytesWritten;
    start = end;
  }
}

/** Makes the rename durable; some file systems refuse fsync on a directory, which is fine. */
async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, "r").catch(() => undefined);
  if (!handle) return;
  await handle.sync().catch(() => undefined);
  await handle.close().catch(() => undefined);
}

function rethrow(error: unknown, path: string): never {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case "ENOSPC":
    case "EDQUOT":
      throw new ToolError("TOOL_ERROR", `No space left on the device holding ${path}; nothing was written and the file is unchanged.`, { cause: error });
    case "EACCES":
    case "EPERM":
    case "EROFS":
      throw new ToolError("PERMISSION_DENIED", `Cannot write ${path}: permission denied (${code}).`, { cause: error });
    case "ENOTDIR":
      throw new ToolError("NOT_A_DIRECTORY", `Cannot write ${path}: a parent of it is a file, not a folder.`, { cause: error });
    case "EISDIR":
      throw new ToolError("IS_A_DIRECTORY", `${path} is a directory.`, { cause: error });
    default:
      throw new ToolError("TOOL_ERROR", `Cannot write ${path}: ${(error as Error).message}`, { cause: error });
  }
}

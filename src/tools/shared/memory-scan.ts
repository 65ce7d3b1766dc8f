import { open } from "node:fs/promises";
import { StringDecoder } from "node:string_decoder";
import { utf16Length } from "./text-view.js";

/**
 * Reading a big memory file without holding it: its totals in one pass of fixed-size
 * reads, and only its last bytes as text. (Entries are parsed by memory-files.ts.)
 */

const CHUNK_BYTES = 64 * 1024;
const NEWLINE = 0x0a;
/** `## 2026-01-01T00:00:00.000Z`: an entry header is exactly this long (plus an optional CR). */
const HEADER_BYTES = 27;
const HEADER = /^## \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export interface MemoryTotals {
  /** UTF-16 length of the whole file (what `text.length` would be). */
  chars: number;
  /** Entries as parseEntries counts them: one per header, plus non-blank text before the first. */
  entries: number;
  /** Byte offset of the last header line, or -1. */
  lastHeaderAt: number;
}

/** Totals of a memory file, read a chunk at a time. */
export async function memoryTotals(path: string): Promise<MemoryTotals> {
  const handle = await open(path, "r");
  try {
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    const preamble = new StringDecoder("utf8");
    let chars = 0;
    let headers = 0;
    let textBeforeHeaders = false;
    let lastHeaderAt = -1;
    // The current line: where it starts, its length, its first bytes (enough to test for a
    // header) and, before the first header, whether it holds more than whitespace.
    let lineStart = 0;
    let lineBytes = 0;
    let lineHasText = false;
    const head = Buffer.alloc(HEADER_BYTES + 1);
    const endLine = () => {
      const length = lineBytes > HEADER_BYTES && head[HEADER_BYTES] === 0x0d ? lineBytes - 1 : lineBytes;
      if (length === HEADER_BYTES && HEADER.test(head.toString("latin1", 0, HEADER_BYTES))) {
        headers++;
        lastHeaderAt = lineStart;
      } else if (headers === 0 && lineHasText) {
        textBeforeHeaders = true;
      }
      lineHasText = false;
    };
    let offset = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, offset);
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      chars += utf16Length(chunk);
      for (let pos = 0; pos < bytesRead; ) {
        const nl = chunk.indexOf(NEWLINE, pos);
        const end = nl === -1 ? bytesRead : nl;
        if (lineBytes <= HEADER_BYTES) chunk.copy(head, lineBytes, pos, Math.min(end, pos + HEADER_BYTES + 1 - lineBytes));
        lineBytes += end - pos;
        if (headers === 0 && !textBeforeHeaders && !lineHasText && /\S/.test(preamble.write(chunk.subarray(pos, end)))) lineHasText = true;
        if (nl === -1) break;
        endLine();
        lineStart = offset + nl + 1;
        lineBytes = 0;
        pos = nl + 1;
      }
      offset += bytesRead;
    }
    if (lineBytes > 0) endLine();
    return { chars, entries: headers + (textBeforeHeaders ? 1 : 0), lastHeaderAt };
  } finally {
    await handle.close();
  }
}

export interface FileSlice {
  text: string;
  /** True when the slice starts at the file's first byte. */
  fromStart: boolean;
  /** The file's size when read. */
  size: number;
}

/**
 * At most `maxBytes` from `from` (default: the last `maxBytes` of the file). A slice that
 * does not start at the file's start begins after its first newline, so it never starts
 * inside a line (or a character); null when the file does not exist.
 */
export async function readSlice(path: string, maxBytes: number, from?: number): Promise<FileSlice | null> {
  let handle;
  try {
    handle = await open(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
  try {
    const { size } = await handle.stat();
    const start = from ?? Math.max(0, size - maxBytes);
    const buffer = Buffer.alloc(Math.max(0, Math.min(maxBytes, size - start)));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, start);
    let bytes = buffer.subarray(0, bytesRead);
    if (start > 0 && bytes[0] !== undefined) {
      // Whether the byte before the slice ends a line decides if its first line is whole.
      const before = Buffer.alloc(1);
      await handle.read(before, 0, 1, start - 1);
      if (before[0] !== NEWLINE) {
        const nl = bytes.indexOf(NEWLINE);
        bytes = nl === -1 ? bytes.subarray(bytes.length) : bytes.subarray(nl + 1);
      }
    }
    return { text: bytes.toString("utf8"), fromStart: start === 0, size };
  } finally {
    await handle.close();
  }
}

import { closeSync, openSync, readSync } from "node:fs";
import { open } from "node:fs/promises";
import { StringDecoder } from "node:string_decoder";
import { MAX_LINE_CHARS, looksBinary, utf16Length, type ShownLine } from "./text-view.js";

/** Bytes read from the file at a time. */
export const READ_CHUNK_BYTES = 64 * 1024;
/** The bytes of one line kept before it is cut: enough for MAX_LINE_CHARS chars and a CR. */
const KEPT_LINE_BYTES = (MAX_LINE_CHARS + 2) * 4;
const NEWLINE = 0x0a;
const CR = 0x0d;

export interface LineWindowRequest {
  /** 1-indexed first line to keep. */
  first: number;
  /** Last line to keep (Infinity for every line up to the cap). */
  last: number;
  /**
   * Lines stop being kept once the kept ones measure more than this (each at most
   * MAX_LINE_CHARS chars plus the `NNNN | ` prefix): nothing past it could be shown.
   */
  keepChars: number;
  signal?: AbortSignal;
}

export interface LineWindow {
  /** NUL in the first 8 KB (nothing else is read then). */
  binary: boolean;
  /** Only whitespace (or nothing) in the whole file. */
  blank: boolean;
  /** Every line of the file, counted as splitLines counts them (no phantom line after a final newline). */
  totalLines: number;
  /** Lines `first`… as kept: CR stripped, cut past MAX_LINE_CHARS with their full length in `chars`. */
  lines: ShownLine[];
  bytesRead: number;
}

/**
 * Files up to this size are read with synchronous calls: each call of the promise API is a
 * round trip through libuv's thread pool (about 0.1–0.3 ms each, five of them for a small
 * file), which made a read_file step slower than a shell command. Past it the reads go
 * through the pool, so a huge file never holds the event loop for long.
 */
export const SYNC_READ_MAX_BYTES = 1024 * 1024;

/**
 * Reads a text file a chunk at a time and keeps only the lines a view can show: the window
 * `first`..`last`, until the kept text passes `keepChars`, each line cut past MAX_LINE_CHARS.
 * The rest is only counted, so a file of any size, with lines of any length (one 1 GB line, a
 * sparse file's holes), costs a chunk plus what is shown. `size` (the file's, from a stat just
 * made) lets a small file be read synchronously.
 */
export async function readLineWindow(path: string, request: LineWindowRequest, size?: number): Promise<LineWindow> {
  if (size !== undefined && size <= SYNC_READ_MAX_BYTES) return readLineWindowSync(path, request);
  const handle = await open(path, "r");
  try {
    const scanner = new LineScanner(request);
    const buffer = Buffer.allocUnsafe(READ_CHUNK_BYTES);
    for (;;) {
      if (request.signal?.aborted) break;
      const { bytesRead: n } = await handle.read(buffer, 0, buffer.length, scanner.bytesRead);
      if (n === 0 || scanner.feed(buffer.subarray(0, n))) break;
    }
    return scanner.finish();
  } finally {
    await handle.close();
  }
}

function readLineWindowSync(path: string, request: LineWindowRequest): LineWindow {
  const fd = openSync(path, "r");
  try {
    const scanner = new LineScanner(request);
    const buffer = Buffer.allocUnsafe(READ_CHUNK_BYTES);
    for (;;) {
      if (request.signal?.aborted) break;
      const n = readSync(fd, buffer, 0, buffer.length, scanner.bytesRead);
      if (n === 0 || scanner.feed(buffer.subarray(0, n))) break;
    }
    return scanner.finish();
  } finally {
    closeSync(fd);
  }
}

/** The window's lines and the file's counts, fed one chunk at a time. */
class LineScanner {
  private readonly lines: ShownLine[] = [];
  private readonly blankCheck = new StringDecoder("utf8");
  private blank = true;
  private binary = false;
  private keptChars = 0;
  private keeping: boolean;
  private line = 1;
  private newlines = 0;
  private lastByte = -1;
  bytesRead = 0;
  private current: LineBuilder | undefined;

  constructor(private readonly request: LineWindowRequest) {
    this.keeping = request.first <= request.last && request.keepChars > 0;
  }

  /** Takes in the next chunk (a reused buffer: what is kept is copied); true when nothing more needs reading. */
  feed(chunk: Buffer): boolean {
    const n = chunk.length;
    const request = this.request;
    if (this.bytesRead === 0 && looksBinary(chunk)) {
      this.binary = true;
      this.bytesRead = n;
      return true;
    }
    this.bytesRead += n;
    this.lastByte = chunk[n - 1]!;
    if (this.blank && /\S/.test(this.blankCheck.write(chunk))) this.blank = false;
    let pos = 0;
    while (pos < n) {
      if (!this.keeping || this.line > request.last) {
        // Nothing more to keep: only count what is left.
        for (let nl = chunk.indexOf(NEWLINE, pos); nl !== -1; nl = chunk.indexOf(NEWLINE, nl + 1)) this.newlines++;
        break;
      }
      const nl = chunk.indexOf(NEWLINE, pos);
      const end = nl === -1 ? n : nl;
      if (this.line >= request.first) (this.current ??= new LineBuilder()).add(chunk.subarray(pos, end));
      if (nl === -1) break;
      if (this.current) {
        this.keptChars += keep(this.lines, this.current);
        this.current = undefined;
        if (this.keptChars > request.keepChars) this.keeping = false;
      }
      this.newlines++;
      this.line++;
      pos = nl + 1;
    }
    return false;
  }

  finish(): LineWindow {
    if (this.binary) return { binary: true, blank: false, totalLines: 0, lines: [], bytesRead: this.bytesRead };
    if (this.current) keep(this.lines, this.current);
    const totalLines = this.newlines + (this.bytesRead > 0 && this.lastByte !== NEWLINE ? 1 : 0);
    let blank = this.blank;
    if (blank && /\S/.test(this.blankCheck.end())) blank = false;
    return { binary: false, blank, totalLines, lines: this.lines, bytesRead: this.bytesRead };
  }
}

function keep(lines: ShownLine[], builder: LineBuilder): number {
  const shown = builder.finish();
  lines.push(shown);
  return Math.min(shown.chars, MAX_LINE_CHARS) + 7;
}

/** One line's first bytes and its full length. */
class LineBuilder {
  private readonly parts: Buffer[] = [];
  private kept = 0;
  private bytes = 0;
  /** UTF-16 length of every byte added, counted without decoding (used when the line is cut). */
  private chars = 0;
  private lastByte = -1;

  add(segment: Buffer): void {
    if (segment.length === 0) return;
    this.bytes += segment.length;
    this.lastByte = segment[segment.length - 1]!;
    const room = KEPT_LINE_BYTES - this.kept;
    if (room > 0) {
      // A copy: the read buffer is reused for the next chunk.
      const part = Buffer.from(segment.subarray(0, room));
      this.parts.push(part);
      this.kept += part.length;
    }
    this.chars += utf16Length(segment);
  }

  finish(): ShownLine {
    let text = Buffer.concat(this.parts, this.kept).toString("utf8");
    const whole = this.kept === this.bytes;
    let chars = whole ? text.length : this.chars;
    if (this.lastByte === CR) {
      chars--;
      if (whole) text = text.slice(0, -1);
    }
    return { text: text.length > MAX_LINE_CHARS ? text.slice(0, MAX_LINE_CHARS) : text, chars };
  }
}

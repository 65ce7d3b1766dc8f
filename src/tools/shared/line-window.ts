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
 * Reads a text file a chunk at a time and keeps only the lines a view can show: the window
 * `first`..`last`, until the kept text passes `keepChars`, each line cut past MAX_LINE_CHARS.
 * The rest is only counted, so a file of any size, with lines of any length (one 1 GB line, a
 * sparse file's holes), costs a chunk plus what is shown.
 */
export async function readLineWindow(path: string, request: LineWindowRequest): Promise<LineWindow> {
  const handle = await open(path, "r");
  try {
    return await scan(handle, request);
  } finally {
    await handle.close();
  }
}

async function scan(handle: Awaited<ReturnType<typeof open>>, request: LineWindowRequest): Promise<LineWindow> {
  const buffer = Buffer.allocUnsafe(READ_CHUNK_BYTES);
  const lines: ShownLine[] = [];
  const blankCheck = new StringDecoder("utf8");
  let blank = true;
  let keptChars = 0;
  let keeping = request.first <= request.last && request.keepChars > 0;
  let line = 1;
  let newlines = 0;
  let lastByte = -1;
  let bytesRead = 0;
  let current: LineBuilder | undefined;

  for (;;) {
    if (request.signal?.aborted) break;
    const { bytesRead: n } = await handle.read(buffer, 0, buffer.length, bytesRead);
    if (n === 0) break;
    const chunk = buffer.subarray(0, n);
    if (bytesRead === 0 && looksBinary(chunk)) return { binary: true, blank: false, totalLines: 0, lines: [], bytesRead: n };
    bytesRead += n;
    lastByte = chunk[n - 1]!;
    if (blank && /\S/.test(blankCheck.write(chunk))) blank = false;
    let pos = 0;
    while (pos < n) {
      if (!keeping || line > request.last) {
        // Nothing more to keep: only count what is left.
        for (let nl = chunk.indexOf(NEWLINE, pos); nl !== -1; nl = chunk.indexOf(NEWLINE, nl + 1)) newlines++;
        break;
      }
      const nl = chunk.indexOf(NEWLINE, pos);
      const end = nl === -1 ? n : nl;
      if (line >= request.first) (current ??= new LineBuilder()).add(chunk.subarray(pos, end));
      if (nl === -1) break;
      if (current) {
        keptChars += keep(lines, current);
        current = undefined;
        if (keptChars > request.keepChars) keeping = false;
      }
      newlines++;
      line++;
      pos = nl + 1;
    }
  }
  if (current) keep(lines, current);
  const totalLines = newlines + (bytesRead > 0 && lastByte !== NEWLINE ? 1 : 0);
  if (blank && /\S/.test(blankCheck.end())) blank = false;
  return { binary: false, blank, totalLines, lines, bytesRead };
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

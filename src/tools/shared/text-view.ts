import { MAX_OUTPUT_CHARS } from "./truncate.js";

/** Lines shown when the caller gives neither offset nor limit. */
export const DEFAULT_READ_LINES = 2000;
/** One very long line (minified code) is cut so it cannot eat the whole budget. */
export const MAX_LINE_CHARS = 2000;

/** A line as a reader kept it: its first chars (at least MAX_LINE_CHARS of them when it is longer) and its full length. */
export interface ShownLine {
  text: string;
  chars: number;
}

/** `   1 | text`: read_file's line-numbered form; tabs stay real tabs. `chars`: the line's full length, when `text` is only its start. */
export function numberLine(lineNumber: number, text: string, chars = text.length): string {
  const shown = chars > MAX_LINE_CHARS ? `${text.slice(0, MAX_LINE_CHARS)}… [line truncated: ${chars} chars]` : text;
  return `${String(lineNumber).padStart(4)} | ${shown}`;
}

/** Splits text into lines: LF or CRLF endings, no phantom last line after a final newline. */
export function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines.map((line) => (line.endsWith("\r") ? line.slice(0, -1) : line));
}

export interface TextWindow {
  /** 1-indexed first line to show. */
  offset?: number;
  /** Lines to show. */
  limit?: number;
}

/** A size cap on rendered output: the limit, how a piece of text is measured, and how the footer names it. */
export interface OutputCap {
  max: number;
  measure(text: string): number;
  /** "30000 chars", "256 KB" */
  label: string;
}

/** The cap every tool shares (30,000 chars), used for FILE_CHANGED bodies. */
export const CHAR_CAP: OutputCap = { max: MAX_OUTPUT_CHARS, measure: (text) => text.length, label: `${MAX_OUTPUT_CHARS} chars` };

/**
 * Renders lines as read_file does: numbered, 2000-line default with read_file's footer
 * when neither offset nor limit is given, and a line-aware size cap (`cap`) with its own footer.
 */
export function renderLines(
  lines: readonly (string | ShownLine)[],
  window: TextWindow = {},
  totalLines = lines.length,
  firstLineNumber = 1,
  cap: OutputCap = CHAR_CAP,
): string {
  const explicit = window.offset !== undefined || window.limit !== undefined;
  const start = Math.max(1, window.offset ?? 1);
  const count = window.limit ?? (explicit ? Number.POSITIVE_INFINITY : DEFAULT_READ_LINES);
  if (start > totalLines) {
    return `<system-reminder>The file has ${totalLines} lines; offset ${start} is past its end.</system-reminder>`;
  }
  const end = Math.min(totalLines, start + count - 1);
  const out: string[] = [];
  let size = 0;
  let lastShown = start - 1;
  for (let n = start; n <= end; n++) {
    const kept = lines[n - firstLineNumber] ?? "";
    const line = typeof kept === "string" ? numberLine(n, kept) : numberLine(n, kept.text, kept.chars);
    const lineSize = cap.measure(line) + 1;
    if (size + lineSize > cap.max && out.length > 0) break;
    out.push(line);
    size += lineSize;
    lastShown = n;
  }
  let text = out.join("\n");
  if (lastShown < end) {
    text += `\n\n(Output capped at ${cap.label}: showing lines ${start}-${lastShown} of ${totalLines}. Use offset/limit to read more.)`;
  } else if (!explicit && totalLines > DEFAULT_READ_LINES) {
    text += `\n\n(File has ${totalLines} total lines. Showing first ${DEFAULT_READ_LINES}. Use offset/limit to read more.)`;
  }
  return text;
}

/** Sizes as the tools write them: `512 B`, `45 KB`, `128.5 KB`, `1.2 MB`. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  const rounded = Math.round(value * 10) / 10;
  return `${Number.isInteger(rounded) ? rounded.toFixed(0) : rounded.toFixed(1)} ${units[unit]}`;
}

/** NUL in the first 8 KB, the same sniff git uses. */
export function looksBinary(head: Buffer): boolean {
  return head.subarray(0, 8192).includes(0);
}

/**
 * UTF-16 length of the UTF-8 text in `bytes`, without decoding it: one unit per lead
 * byte, two for 4-byte sequences (astral characters). Used for text past a cap, where
 * decoding a gigabyte just to count it would cost time and garbage.
 */
export function utf16Length(bytes: Uint8Array): number {
  let units = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if ((b & 0xc0) !== 0x80) units += b >= 0xf0 ? 2 : 1;
  }
  return units;
}

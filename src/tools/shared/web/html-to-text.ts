import { readHtml, type Attribs, type TreeEvents } from "./html-tree.js";

/**
 * Readable text from HTML, as light markdown: headings (`#`), links (`[text](url)`),
 * list items (`-`, `1.`), table cells (`|`), code blocks (```), paragraphs separated
 * by blank lines. Script, style, noscript, svg, template and the like are dropped.
 * One streaming pass over htmlparser2's tokenizer; no DOM is built.
 *
 * Speed (a 5 MB page must convert in well under 300 ms): text is copied char by char
 * from the source into one growable UTF-16 buffer, whitespace collapsed on the way,
 * instead of being appended to a string. Appending keeps every text node alive until
 * the end, and on a multi-megabyte page the garbage collector then spends most of its
 * time copying those survivors. The state lives in a class, not in closures, so V8's
 * optimised code is reused from one document to the next.
 */

// What each tag does; tags not listed only matter to the tree.
const HEADING = 1;
const LI = 2;
const LIST = 3;
const PRE = 4;
const BR = 5;
const HR = 6;
const TR = 7;
const CELL = 8;
const LINK = 9;
const IMG = 10;
const CODE = 11;
/** Block that starts on a new line. */
const BLOCK1 = 12;
/** Block set off by a blank line. */
const BLOCK2 = 13;
/** Dropped with its content. */
const SKIP = 14;
/** In the skip list but void: nothing to drop. */
const SKIP_VOID = 15;

const KINDS = new Map<string, number>([
  ...["h1", "h2", "h3", "h4", "h5", "h6"].map((t) => [t, HEADING] as const),
  ...["ul", "ol", "menu"].map((t) => [t, LIST] as const),
  ...["div", "dt", "dd", "summary"].map((t) => [t, BLOCK1] as const),
  ...[
    "p", "section", "article", "main", "header", "footer", "nav", "aside", "form", "fieldset", "figure", "figcaption",
    "address", "blockquote", "dl", "table", "thead", "tbody", "tfoot", "caption", "details", "center", "legend", "body", "html",
  ].map((t) => [t, BLOCK2] as const),
  ["li", LI], ["pre", PRE], ["br", BR], ["hr", HR], ["tr", TR], ["td", CELL], ["th", CELL], ["a", LINK], ["img", IMG], ["code", CODE],
  ...["script", "style", "noscript", "svg", "math", "template", "iframe", "object", "canvas", "select", "datalist"].map((t) => [t, SKIP] as const),
  ["embed", SKIP_VOID],
]);
const HEADING_MARKS = ["", "# ", "## ", "### ", "#### ", "##### ", "###### "];

const NL = 10;
const SP = 32;
/** `Buffer#toString("utf16le")` reads the buffer's bytes as little-endian code units. */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Whitespace as the regex class `\s` defines it. */
function isSpace(c: number): boolean {
  return c === SP || (c >= 9 && c <= 13) || (c > 127 && (c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff));
}

interface LinkFrame {
  href: string | null;
}

interface ListFrame {
  ordered: boolean;
  counter: number;
}

export interface HtmlToTextResult {
  title: string | null;
  text: string;
}

/** Converts an HTML document to readable text; `baseUrl` resolves relative links. */
export function htmlToText(html: string, baseUrl?: string): HtmlToTextResult {
  const converter = new TextConverter(html.length, baseUrl);
  readHtml(html, converter);
  return converter.finish();
}

class TextConverter implements TreeEvents {
  // Output so far: buf[0, pos). While a link is open its label is buf[labelStart, pos).
  private buf: Uint16Array;
  private pos = 0;
  /** OR of every code unit written: above 255 means the text is not Latin-1. */
  private bits = 0;
  private labelStart = -1;
  /** Line breaks owed before the next output (1 = new line, 2 = blank line). */
  private pending = 0;
  private lastChar = NL;
  private skipDepth = 0;
  private skipTag: string | null = null;
  private preDepth = 0;
  private inTitle = false;
  private title = "";
  private cellIndex = 0;
  private readonly links: LinkFrame[] = [];
  private readonly lists: ListFrame[] = [];

  constructor(
    sourceLength: number,
    private readonly baseUrl: string | undefined,
  ) {
    this.buf = new Uint16Array(Math.max(1024, sourceLength + 64));
  }

  openTag(name: string, attribs: Attribs): void {
    if (name === "title" && this.skipTag === null && this.title === "") {
      this.inTitle = true;
      return;
    }
    if (this.skipDepth > 0) {
      if (name === this.skipTag) this.skipDepth++;
      return;
    }
    switch (KINDS.get(name)) {
      case SKIP:
        this.skipDepth = 1;
        this.skipTag = name;
        return;
      case HEADING:
        this.block(2);
        this.emit(HEADING_MARKS[name.charCodeAt(1) - 48]!);
        return;
      case LI: {
        this.block(1);
        const lists = this.lists;
        const list = lists.at(-1);
        const indent = "  ".repeat(Math.max(0, lists.length - 1));
        if (list?.ordered) this.emit(`${indent}${++list.counter}. `);
        else this.emit(`${indent}- `);
        return;
      }
      case LIST: {
        this.block(this.lists.length === 0 ? 2 : 1);
        const start = Number(attribs.start);
        this.lists.push({ ordered: name === "ol", counter: Number.isFinite(start) ? start - 1 : 0 });
        return;
      }
      case PRE:
        this.block(2);
        this.emit("```\n");
        this.preDepth++;
        return;
      case BR:
        if (this.preDepth > 0) this.emit("\n");
        else this.block(1);
        return;
      case HR:
        this.block(2);
        this.emit("---");
        this.block(2);
        return;
      case TR:
        this.block(1);
        this.cellIndex = 0;
        return;
      case CELL:
        if (this.cellIndex++ > 0) this.emit(" | ");
        return;
      case LINK: {
        this.flushPending();
        const href = this.links.length === 0 ? this.resolveHref(attribs.href) : null;
        this.links.push({ href });
        if (href !== null) this.labelStart = this.pos;
        return;
      }
      case IMG: {
        const alt = attribs.alt ? attribs.alt.replace(/\s+/g, " ").trim() : "";
        if (alt) this.emitInline(`[image: ${alt}]`);
        return;
      }
      case CODE:
        if (this.preDepth === 0) this.emitInline("`");
        return;
      case BLOCK1:
        this.block(1);
        return;
      case BLOCK2:
        this.block(2);
        return;
    }
  }

  closeTag(name: string): void {
    if (name === "title" && this.inTitle) {
      this.inTitle = false;
      return;
    }
    if (this.skipDepth > 0) {
      if (name === this.skipTag && --this.skipDepth === 0) this.skipTag = null;
      return;
    }
    switch (KINDS.get(name)) {
      case HEADING:
      case BLOCK2:
        this.block(2);
        return;
      case LI:
      case TR:
      case BLOCK1:
        this.block(1);
        return;
      case LIST:
        this.lists.pop();
        this.block(this.lists.length === 0 ? 2 : 1);
        return;
      case PRE:
        this.preDepth = Math.max(0, this.preDepth - 1);
        if (this.lastChar !== NL) this.emit("\n");
        this.emit("```");
        this.block(2);
        return;
      case LINK: {
        const frame = this.links.pop();
        if (frame && frame.href !== null && this.links.length === 0 && this.labelStart >= 0) {
          const inner = decode(this.buf, this.labelStart, this.pos, this.bits);
          this.pos = this.labelStart;
          this.labelStart = -1;
          const label = inner.replace(/\s+/g, " ").trim().replace(/^\[(image: .*)\]$/, "$1");
          if (label) this.emit(`[${label}](${frame.href})`);
          else if (inner) this.emit(inner);
        }
        return;
      }
      case CODE:
        if (this.preDepth === 0) this.emitInline("`");
        return;
    }
  }

  text(data: string, start: number, end: number): void {
    if (this.inTitle) this.title += data.slice(start, end);
    else if (this.skipDepth > 0) return;
    else if (this.preDepth > 0) this.emitRaw(data, start, end);
    else this.emitText(data, start, end);
  }

  finish(): HtmlToTextResult {
    // An unclosed link's label is already in place at the end of the buffer.
    const { buf, pos } = this;
    let text: string;
    if (this.bits <= 0xff) {
      // Latin-1 only (the common case): tidy straight into bytes, one pass.
      const bytes = Buffer.allocUnsafe(pos);
      text = bytes.toString("latin1", 0, tidyLines(buf, pos, bytes)).trim();
    } else {
      text = decode(buf, 0, tidyLines(buf, pos, buf), this.bits).trim();
    }
    const cleanTitle = this.title.replace(/\s+/g, " ").trim();
    return { title: cleanTitle || null, text };
  }

  private resolveHref(href: string | undefined): string | null {
    if (!href) return null;
    const trimmed = href.trim();
    if (trimmed.startsWith("#") || /^(?:javascript|data|vbscript):/i.test(trimmed)) return null;
    try {
      return this.baseUrl ? new URL(trimmed, this.baseUrl).href : trimmed;
    } catch {
      return trimmed;
    }
  }

  private reserve(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const bigger = new Uint16Array(Math.max(this.buf.length * 2, this.pos + n));
    bigger.set(this.buf.subarray(0, this.pos));
    this.buf = bigger;
  }

  /** Copies data[from, to) verbatim. */
  private copy(data: string, from: number, to: number): void {
    this.reserve(to - from);
    const buf = this.buf;
    let pos = this.pos;
    let bits = this.bits;
    for (let i = from; i < to; i++) {
      const c = data.charCodeAt(i);
      bits |= c;
      buf[pos++] = c;
    }
    this.pos = pos;
    this.bits = bits;
  }

  /**
   * Copies data[from, to) unless it needs whitespace collapsing (\t \n \v \f \r, NBSP,
   * two spaces; `prev` is the char before `from`); returns false then, having written nothing.
   */
  private copyPlain(data: string, from: number, to: number, prev: number): boolean {
    this.reserve(to - from);
    const buf = this.buf;
    let pos = this.pos;
    let bits = this.bits;
    for (let i = from; i < to; i++) {
      const c = data.charCodeAt(i);
      if (c <= SP ? (c >= 9 && c <= 13) || (c === SP && prev === SP) : c === 0xa0) return false;
      bits |= c;
      buf[pos++] = c;
      prev = c;
    }
    this.pos = pos;
    this.bits = bits;
    return true;
  }

  private flushPending(): void {
    const pending = this.pending;
    if (pending === 0) return;
    if (this.pos > 0) {
      this.reserve(pending);
      for (let i = 0; i < pending; i++) this.buf[this.pos++] = NL;
    }
    this.pending = 0;
    this.lastChar = NL;
  }

  /** Asks for a line break (1) or a blank line (2) before the next output, once there is output. */
  private block(n: number): void {
    if (this.pos > 0 && n > this.pending) this.pending = n;
  }

  private emit(text: string): void {
    this.emitRaw(text, 0, text.length);
  }

  /** Text data[start, end) verbatim (markup, and text inside <pre>). */
  private emitRaw(data: string, start: number, end: number): void {
    if (start >= end) return;
    this.flushPending();
    this.copy(data, start, end);
    this.lastChar = data.charCodeAt(end - 1);
  }

  /** Text data[start, end) outside <pre>: whitespace runs become one space, and a leading space is dropped after a break or space. */
  private emitText(data: string, start: number, end: number): void {
    if (start >= end) return;
    const afterBreak = this.pending > 0 || this.lastChar === NL || this.lastChar === SP;
    const from = afterBreak && data.charCodeAt(start) === SP ? start + 1 : start;
    if (from === end) return;
    // Most text needs no collapsing: try a verbatim copy first, undone if it meets whitespace to collapse.
    if (!this.needsCollapseFrom(data, from, end)) {
      const { pos, pending, lastChar } = this;
      this.flushPending();
      if (this.copyPlain(data, from, end, from > start ? SP : 0)) {
        this.lastChar = data.charCodeAt(end - 1);
        return;
      }
      this.pos = pos;
      this.pending = pending;
      this.lastChar = lastChar;
    }
    let i = start;
    let lead = false;
    if (isSpace(data.charCodeAt(start))) {
      while (i < end && isSpace(data.charCodeAt(i))) i++;
      lead = !afterBreak;
      if (!lead && i === end) return;
    }
    this.flushPending();
    this.reserve(end - start + 1);
    const buf = this.buf;
    let pos = this.pos;
    let bits = this.bits;
    let last = SP;
    if (lead) buf[pos++] = SP;
    while (i < end) {
      const c = data.charCodeAt(i++);
      if (isSpace(c)) {
        while (i < end && isSpace(data.charCodeAt(i))) i++;
        buf[pos++] = SP;
        last = SP;
      } else {
        bits |= c;
        buf[pos++] = c;
        last = c;
      }
    }
    this.pos = pos;
    this.bits = bits;
    this.lastChar = last;
  }

  /** Whether the first chars decide that data[from, end) must be collapsed before anything is written. */
  private needsCollapseFrom(data: string, from: number, end: number): boolean {
    const c = data.charCodeAt(from);
    return (c >= 9 && c <= 13) || c === 0xa0 || (c === SP && from + 1 < end && data.charCodeAt(from + 1) === SP);
  }

  private emitInline(text: string): void {
    if (this.pending === 0 && this.lastChar !== SP && this.lastChar !== NL && text.charCodeAt(0) === 0x5b /* [ */) this.emit(" ");
    this.emit(text);
  }
}

/**
 * Copies buf[0, length) to `dest` (which may be `buf` itself) dropping spaces and tabs
 * before each line break and capping runs of line breaks at two (a blank line), as
 * `.replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n")` would. Returns the new length.
 */
function tidyLines(buf: Uint16Array, length: number, dest: Uint16Array | Uint8Array): number {
  let out = 0;
  let breaks = 0;
  for (let i = 0; i < length; i++) {
    const c = buf[i]!;
    if (c === NL) {
      while (out > 0 && (dest[out - 1] === SP || dest[out - 1] === 9)) out--;
      if (out > 0 && dest[out - 1] !== NL) breaks = 0;
      if (++breaks > 2) continue;
    }
    dest[out++] = c;
  }
  return out;
}

/** The string held in buf[from, to); `bits` (OR of the code units) picks the fast Latin-1 path when it can. */
function decode(buf: Uint16Array, from: number, to: number, bits: number): string {
  const n = to - from;
  if (n <= 0) return "";
  if (n <= 4096) return String.fromCharCode.apply(null, buf.subarray(from, to) as unknown as number[]);
  if (bits <= 0xff) return Buffer.from(new Uint8Array(buf.subarray(from, to))).toString("latin1");
  if (LITTLE_ENDIAN) return Buffer.from(buf.buffer, buf.byteOffset + from * 2, n * 2).toString("utf16le");
  const parts: string[] = [];
  for (let i = from; i < to; i += 4096) parts.push(String.fromCharCode.apply(null, buf.subarray(i, Math.min(to, i + 4096)) as unknown as number[]));
  return parts.join("");
}

import { comparePaths } from "./file-walk.js";

/** A matched line longer than this is shown cut (minified files). */
export const MAX_GREP_LINE_CHARS = 500;

export interface GrepLine {
  n: number;
  /** At most MAX_GREP_LINE_CHARS + 1 chars: enough to show the line and to know it was cut. */
  text: string;
  match: boolean;
}

export interface GrepFile {
  /** `/`-separated, relative to the search root. */
  path: string;
  lines: GrepLine[];
}

/**
 * The lines of a search that its answer can show, and the counts of all of them. Files are
 * shown in path order until the answer's cap, so once the files kept fill `keepChars`,
 * every file that sorts after them is only counted: a search matching every line of a big
 * tree holds about one answer's worth of lines, however many it finds.
 */
export class GrepMatches {
  /** Kept files in path order. */
  private readonly kept: (GrepFile & { chars: number })[] = [];
  private keptChars = 0;
  /** Files sorting after this one are past the cap; it is the last kept then. */
  private boundary: string | undefined;
  private last: (GrepFile & { chars: number }) | undefined;
  private readonly seen = new Set<string>();
  private matchCount = 0;

  /**
   * @param keepChars the answer's cap, in chars
   * @param prefixChars chars the answer adds before each path (its folder and a `/`)
   */
  constructor(
    private readonly keepChars: number,
    private readonly prefixChars = 0,
  ) {}

  add(path: string, n: number, text: string, match: boolean): void {
    if (match) this.matchCount++;
    this.seen.add(path);
    if (this.boundary !== undefined) {
      const order = comparePaths(path, this.boundary);
      if (order > 0 || (order === 0 && this.keptChars >= this.keepChars)) return;
    }
    const file = this.fileFor(path);
    // What the line takes in the answer at least (`path:n:text` and its newline).
    const chars = this.prefixChars + path.length + String(n).length + Math.min(text.length, MAX_GREP_LINE_CHARS) + 3;
    file.lines.push({ n, text: detached(text.length > MAX_GREP_LINE_CHARS + 1 ? text.slice(0, MAX_GREP_LINE_CHARS + 1) : text), match });
    file.chars += chars;
    this.keptChars += chars;
    if (this.keptChars > this.keepChars) this.dropPastCap();
  }

  /** Kept files in path order. */
  get files(): GrepFile[] {
    return this.kept.map(({ path, lines }) => ({ path, lines }));
  }

  /** Matching lines found, kept or not. */
  get matches(): number {
    return this.matchCount;
  }

  /** Files with a line found, kept or not. */
  get fileCount(): number {
    return this.seen.size;
  }

  private fileFor(path: string): GrepFile & { chars: number } {
    if (this.last?.path === path) return this.last;
    let low = 0;
    let high = this.kept.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (comparePaths(this.kept[mid]!.path, path) < 0) low = mid + 1;
      else high = mid;
    }
    let file = this.kept[low];
    if (file?.path !== path) {
      file = { path, lines: [], chars: 0 };
      this.kept.splice(low, 0, file);
    }
    this.last = file;
    return file;
  }

  /** Drops the files that start at or past the cap (counting in path order); the one that reaches it stays. */
  private dropPastCap(): void {
    let before = 0;
    for (let i = 0; i < this.kept.length; i++) {
      if (before >= this.keepChars) {
        for (const dropped of this.kept.splice(i)) this.keptChars -= dropped.chars;
        if (this.last && !this.kept.includes(this.last)) this.last = undefined;
        break;
      }
      before += this.kept[i]!.chars;
    }
    if (this.keptChars >= this.keepChars) this.boundary = this.kept.at(-1)?.path;
  }
}

/**
 * A copy of `text` that does not keep alive the larger string it was sliced from (V8 keeps
 * a slice as a view of its parent: a kept line would hold rg's whole output chunk).
 */
function detached(text: string): string {
  return text.length < 16 ? text : Buffer.from(text, "utf8").toString("utf8");
}

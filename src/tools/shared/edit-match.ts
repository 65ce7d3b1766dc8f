import { numberLine, splitLines } from "./text-view.js";

export interface MatchPlan {
  /** The strings actually searched and inserted (LF turned into CRLF for a CRLF file). */
  search: string;
  replace: string;
  /** Non-overlapping occurrences. */
  count: number;
  /** Start offsets of the first `keep` of them (planReplacement's argument). */
  positions: number[];
}

/**
 * Finds `oldString` in `content`. Exact first; then, when the file has CRLF endings and
 * the model sent LF (or the reverse), the same text with the file's endings is tried and
 * `newString` is converted too, so the file keeps its line endings. Only the first `keep`
 * offsets are listed (a one-letter old_string may occur millions of times).
 */
export function planReplacement(content: string, oldString: string, newString: string, keep = 1): MatchPlan {
  const exact = occurrences(content, oldString, keep);
  if (exact.count > 0) return { search: oldString, replace: newString, ...exact };
  const convert = content.includes("\r\n")
    ? (text: string) => text.replace(/\r?\n/g, "\r\n")
    : (text: string) => text.replace(/\r\n/g, "\n");
  const search = convert(oldString);
  if (search === oldString) return { search: oldString, replace: newString, ...exact };
  return { search, replace: convert(newString), ...occurrences(content, search, keep) };
}

/** How many non-overlapping times `needle` occurs, and where the first `keep` start. */
export function occurrences(content: string, needle: string, keep = Number.POSITIVE_INFINITY): { count: number; positions: number[] } {
  const positions: number[] = [];
  let count = 0;
  if (needle === "") return { count, positions };
  for (let at = content.indexOf(needle); at !== -1; at = content.indexOf(needle, at + needle.length)) {
    if (count++ < keep) positions.push(at);
  }
  return { count, positions };
}

/** Applies the plan (all occurrences, or only the first); replacement text is literal (no `$` patterns). */
export function applyReplacement(content: string, plan: MatchPlan, all: boolean): string {
  if (all) return content.replaceAll(plan.search, () => plan.replace);
  const at = plan.positions[0]!;
  return content.slice(0, at) + plan.replace + content.slice(at + plan.search.length);
}

/** 1-indexed line numbers of ascending character offsets, in one pass. */
export function linesAt(content: string, offsets: readonly number[]): number[] {
  const lines: number[] = [];
  let line = 1;
  let nl = content.indexOf("\n");
  for (const offset of offsets) {
    for (; nl !== -1 && nl < offset; nl = content.indexOf("\n", nl + 1)) line++;
    lines.push(line);
  }
  return lines;
}

/** 1-indexed line number of a character offset. */
export function lineAt(content: string, offset: number): number {
  return linesAt(content, [offset])[0]!;
}

/**
 * Lines `from`..`to` (1-indexed, clamped) of `content` as splitLines gives them, found by
 * scanning, without splitting the rest of the file.
 */
export function linesBetween(content: string, from: number, to: number): string[] {
  const out: string[] = [];
  let start = 0;
  for (let line = 1; line < from && start !== -1; line++) {
    const nl = content.indexOf("\n", start);
    start = nl === -1 ? -1 : nl + 1;
  }
  for (let line = Math.max(1, from); line <= to && start !== -1 && start < content.length; line++) {
    const nl = content.indexOf("\n", start);
    const end = nl === -1 ? content.length : nl;
    const text = content.slice(start, end);
    out.push(text.endsWith("\r") ? text.slice(0, -1) : text);
    start = nl === -1 ? -1 : nl + 1;
  }
  return out;
}

/** Numbered lines `from`..`to` of `content` (1-indexed, clamped), each number shifted by `offset`. */
export function numberedRegion(content: string, from: number, to: number, offset = 0): string {
  const first = Math.max(1, from);
  return linesBetween(content, first, to)
    .map((line, i) => numberLine(offset + first + i, line))
    .join("\n");
}

/** Beyond this many line comparisons only the first line of old_string is scored. */
const MAX_COMPARISONS = 500_000;

/**
 * Explains a miss: the region of the file most like `oldString`, numbered, plus a hint
 * when the difference is only whitespace or read_file's line-number prefixes. The file is
 * scanned line by line; only the bigrams of the lines a candidate region still spans are kept.
 */
export function describeMiss(content: string, oldString: string): string {
  const wanted = splitLines(oldString);
  const fileLineCount = countLines(content);
  if (fileLineCount === 0 || wanted.length === 0) return "";
  const hints: string[] = [];
  if (wanted.some((line) => /^\s*\d+ \| /.test(line))) {
    hints.push("old_string seems to include read_file's line-number prefixes (`  12 | `); send only the text after them.");
  }
  const probe = wanted.length * fileLineCount > MAX_COMPARISONS ? wanted.slice(0, 1) : wanted;
  const best = closestRegion(content, probe.map(bigrams));
  const span = Math.max(1, wanted.length);
  const region = linesBetween(content, best + 1, best + span);
  const squash = (lines: string[]) => lines.map((line) => line.trim().replace(/\s+/g, " ")).join("\n");
  if (region.length === wanted.length && squash(region) === squash(wanted)) {
    hints.push("The closest region differs only in whitespace/indentation; copy the exact whitespace from it.");
  }
  const from = best + 1;
  const to = best + span;
  const shown = numberedRegion(content, from - 2, to + 2);
  return `Closest match (lines ${from}-${Math.min(to, fileLineCount)}):\n${shown}${hints.length ? `\n\n${hints.join("\n")}` : ""}`;
}

/** Lines as splitLines counts them, without splitting. */
export function countLines(content: string): number {
  if (content === "") return 0;
  let count = 0;
  for (let nl = content.indexOf("\n"); nl !== -1; nl = content.indexOf("\n", nl + 1)) count++;
  return content.endsWith("\n") ? count : count + 1;
}

/**
 * The 0-indexed start line of the window most like `probe` (the sum of each line's dice
 * score; windows running past the end score only their lines; the first best wins). Each
 * file line adds its score to the windows still open, so only `probe.length` partial
 * scores are held.
 */
function closestRegion(content: string, probe: Map<string, number>[]): number {
  const open = new Array<number>(probe.length).fill(0);
  let best = { start: 0, score: -1 };
  const settle = (start: number) => {
    const slot = start % probe.length;
    if (open[slot]! > best.score) best = { start, score: open[slot]! };
    open[slot] = 0;
  };
  let index = 0;
  for (const line of eachLine(content)) {
    const grams = bigrams(line);
    for (let k = 0; k < probe.length && k <= index; k++) open[(index - k) % probe.length]! += dice(probe[k]!, grams);
    if (index >= probe.length - 1) settle(index - probe.length + 1);
    index++;
  }
  for (let start = Math.max(0, index - probe.length + 1); start < index; start++) settle(start);
  return best.start;
}

/** Each line of `content` as splitLines gives it, one at a time. */
function* eachLine(content: string): Generator<string> {
  let start = 0;
  while (start < content.length) {
    const nl = content.indexOf("\n", start);
    const end = nl === -1 ? content.length : nl;
    yield content.charCodeAt(end - 1) === 13 && end > start ? content.slice(start, end - 1) : content.slice(start, end);
    if (nl === -1) break;
    start = nl + 1;
  }
}

function bigrams(line: string): Map<string, number> {
  const text = line.trim();
  const grams = new Map<string, number>();
  for (let i = 0; i < text.length - 1; i++) {
    const gram = text.slice(i, i + 2);
    grams.set(gram, (grams.get(gram) ?? 0) + 1);
  }
  if (text.length === 1) grams.set(text, 1);
  return grams;
}

/** Sørensen–Dice similarity of two bigram bags, 0..1 (two empty lines count as equal). */
function dice(a: Map<string, number>, b: Map<string, number>): number {
  let sizeA = 0;
  let sizeB = 0;
  let shared = 0;
  for (const count of a.values()) sizeA += count;
  for (const [gram, count] of b) {
    sizeB += count;
    shared += Math.min(count, a.get(gram) ?? 0);
  }
  if (sizeA + sizeB === 0) return 1;
  return (2 * shared) / (sizeA + sizeB);
}

import { numberLine, splitLines } from "./text-view.js";

export interface MatchPlan {
  /** The strings actually searched and inserted (LF turned into CRLF for a CRLF file). */
  search: string;
  replace: string;
  /** Start offsets of every non-overlapping occurrence. */
  positions: number[];
}

/**
 * Finds `oldString` in `content`. Exact first; then, when the file has CRLF endings and
 * the model sent LF (or the reverse), the same text with the file's endings is tried and
 * `newString` is converted too, so the file keeps its line endings.
 */
export function planReplacement(content: string, oldString: string, newString: string): MatchPlan {
  const exact = occurrences(content, oldString);
  if (exact.length > 0) return { search: oldString, replace: newString, positions: exact };
  const convert = content.includes("\r\n")
    ? (text: string) => text.replace(/\r?\n/g, "\r\n")
    : (text: string) => text.replace(/\r\n/g, "\n");
  const search = convert(oldString);
  if (search === oldString) return { search: oldString, replace: newString, positions: exact };
  return { search, replace: convert(newString), positions: occurrences(content, search) };
}

export function occurrences(content: string, needle: string): number[] {
  const found: number[] = [];
  if (needle === "") return found;
  for (let at = content.indexOf(needle); at !== -1; at = content.indexOf(needle, at + needle.length)) found.push(at);
  return found;
}

/** Applies the plan (all occurrences, or only the first). */
export function applyReplacement(content: string, plan: MatchPlan, all: boolean): string {
  const positions = all ? plan.positions : plan.positions.slice(0, 1);
  let out = "";
  let last = 0;
  for (const at of positions) {
    out += content.slice(last, at) + plan.replace;
    last = at + plan.search.length;
  }
  return out + content.slice(last);
}

/** 1-indexed line number of a character offset. */
export function lineAt(content: string, offset: number): number {
  let line = 1;
  for (let i = content.indexOf("\n"); i !== -1 && i < offset; i = content.indexOf("\n", i + 1)) line++;
  return line;
}

/** Numbered lines `from`..`to` (1-indexed, clamped). */
export function numberedRegion(lines: string[], from: number, to: number): string {
  const out: string[] = [];
  for (let n = Math.max(1, from); n <= Math.min(lines.length, to); n++) out.push(numberLine(n, lines[n - 1]!));
  return out.join("\n");
}

/** Beyond this many line comparisons only the first line of old_string is scored. */
const MAX_COMPARISONS = 500_000;

/**
 * Explains a miss: the region of the file most like `oldString`, numbered, plus a hint
 * when the difference is only whitespace or read_file's line-number prefixes.
 */
export function describeMiss(content: string, oldString: string): string {
  const fileLines = splitLines(content);
  const wanted = splitLines(oldString);
  if (fileLines.length === 0 || wanted.length === 0) return "";
  const hints: string[] = [];
  if (wanted.some((line) => /^\s*\d+ \| /.test(line))) {
    hints.push("old_string seems to include read_file's line-number prefixes (`  12 | `); send only the text after them.");
  }
  const probe = wanted.length * fileLines.length > MAX_COMPARISONS ? wanted.slice(0, 1) : wanted;
  const wantedGrams = probe.map(bigrams);
  const fileGrams = fileLines.map(bigrams);
  let best = { start: 0, score: -1 };
  for (let start = 0; start < fileLines.length; start++) {
    let score = 0;
    for (let k = 0; k < probe.length && start + k < fileLines.length; k++) score += dice(wantedGrams[k]!, fileGrams[start + k]!);
    if (score > best.score) best = { start, score };
  }
  const span = Math.max(1, wanted.length);
  const region = fileLines.slice(best.start, best.start + span);
  const squash = (lines: string[]) => lines.map((line) => line.trim().replace(/\s+/g, " ")).join("\n");
  if (region.length === wanted.length && squash(region) === squash(wanted)) {
    hints.push("The closest region differs only in whitespace/indentation; copy the exact whitespace from it.");
  }
  const from = best.start + 1;
  const to = best.start + span;
  const shown = numberedRegion(fileLines, from - 2, to + 2);
  return `Closest match (lines ${from}-${Math.min(to, fileLines.length)}):\n${shown}${hints.length ? `\n\n${hints.join("\n")}` : ""}`;
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

import { describe, expect, it } from "vitest";
import { describeMiss, linesBetween, numberedRegion, occurrences, planReplacement } from "../../../src/tools/shared/edit-match.js";
import { numberLine, splitLines } from "../../../src/tools/shared/text-view.js";
import { distBuilt, distModule, runWithHeap } from "../../helpers/bounded-heap.js";

/** describeMiss as it was when it split the whole file and kept every line's bigrams: the answers must not change. */
function referenceMiss(content: string, oldString: string): string {
  const fileLines = splitLines(content);
  const wanted = splitLines(oldString);
  if (fileLines.length === 0 || wanted.length === 0) return "";
  const hints: string[] = [];
  if (wanted.some((line) => /^\s*\d+ \| /.test(line))) {
    hints.push("old_string seems to include read_file's line-number prefixes (`  12 | `); send only the text after them.");
  }
  const probe = wanted.length * fileLines.length > 500_000 ? wanted.slice(0, 1) : wanted;
  const bigrams = (line: string) => {
    const text = line.trim();
    const grams = new Map<string, number>();
    for (let i = 0; i < text.length - 1; i++) grams.set(text.slice(i, i + 2), (grams.get(text.slice(i, i + 2)) ?? 0) + 1);
    if (text.length === 1) grams.set(text, 1);
    return grams;
  };
  const dice = (a: Map<string, number>, b: Map<string, number>) => {
    let sizeA = 0;
    let sizeB = 0;
    let shared = 0;
    for (const count of a.values()) sizeA += count;
    for (const [gram, count] of b) {
      sizeB += count;
      shared += Math.min(count, a.get(gram) ?? 0);
    }
    return sizeA + sizeB === 0 ? 1 : (2 * shared) / (sizeA + sizeB);
  };
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
  const shown: string[] = [];
  for (let n = Math.max(1, from - 2); n <= Math.min(fileLines.length, to + 2); n++) shown.push(numberLine(n, fileLines[n - 1]!));
  return `Closest match (lines ${from}-${Math.min(to, fileLines.length)}):\n${shown.join("\n")}${hints.length ? `\n\n${hints.join("\n")}` : ""}`;
}

/** A small deterministic generator, so a failure names its case. */
function randomText(seed: number, lines: number): string {
  let state = seed;
  const next = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const words = ["foo", "bar", "  baz", "\tqux", "return 1;", "", "x", "def f():", "   2 | y", "é😀"];
  return Array.from({ length: lines }, () => Array.from({ length: Math.floor(next() * 4) }, () => words[Math.floor(next() * words.length)]).join(" ")).join(next() < 0.3 ? "\r\n" : "\n");
}

describe("describeMiss", () => {
  it("gives the same answer as scoring every line of the split file", () => {
    for (let seed = 1; seed <= 300; seed++) {
      const content = randomText(seed, 1 + (seed % 40)) + (seed % 3 === 0 ? "\n" : "");
      const oldString = randomText(seed * 7919, 1 + (seed % 5));
      expect(describeMiss(content, oldString), `seed ${seed}`).toBe(referenceMiss(content, oldString));
    }
  });

  it.skipIf(!distBuilt)("explains a miss in a 500,000-line file with a heap far smaller than every line's bigrams", async () => {
    // Splitting the file and keeping each line's bigrams took about 500 MB here and died at 64 MB.
    const run = await runWithHeap(
      64,
      `const { describeMiss } = await import(${JSON.stringify(distModule("src/tools/shared/edit-match.js"))});
       const content = Array.from({ length: 500_000 }, (_, i) => "line " + i + " of text").join("\\n");
       process.stdout.write(describeMiss(content, "line 434567 of texx\\nline 434568 of text"));`,
      110_000,
    );
    expect(run.stderr).not.toContain("heap out of memory");
    expect(run.stdout.startsWith("Closest match (lines 434568-434569):\n434566 | line 434565 of text\n")).toBe(true);
  }, 120_000);
});

describe("planReplacement and the line helpers", () => {
  it("counts every occurrence but lists only the first `keep` offsets", () => {
    const content = "a".repeat(1_000_000);
    const plan = planReplacement(content, "a", "b", 20);
    expect(plan.count).toBe(1_000_000);
    expect(plan.positions).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(occurrences("aaaa", "aa")).toEqual({ count: 2, positions: [0, 2] });
  });

  it("takes lines and numbered regions out of the text as splitLines would", () => {
    for (const text of ["", "a", "a\n", "a\r\nb\r\n", "\n\nc", "x\ny\nz"]) {
      const lines = splitLines(text);
      for (let from = 0; from <= 4; from++) {
        for (let to = from; to <= 5; to++) {
          expect(linesBetween(text, Math.max(1, from), to), JSON.stringify([text, from, to])).toEqual(lines.slice(Math.max(1, from) - 1, to));
        }
      }
      expect(numberedRegion(text, -1, 2)).toBe(lines.slice(0, 2).map((line, i) => numberLine(i + 1, line)).join("\n"));
    }
  });
});

import { describe, expect, it } from "vitest";
import { GrepMatches, MAX_GREP_LINE_CHARS, type GrepFile } from "../../../src/tools/shared/grep-matches.js";
import { comparePaths } from "../../../src/tools/shared/file-walk.js";

/** `path:n:text` lines in path order until `cap` chars, as the grep answer renders them. */
function rendered(files: GrepFile[], cap: number, prefix = ""): string[] {
  const out: string[] = [];
  let chars = 0;
  for (const file of files) {
    for (const line of file.lines) {
      const text = line.text.length > MAX_GREP_LINE_CHARS ? `${line.text.slice(0, MAX_GREP_LINE_CHARS)}… [line truncated]` : line.text;
      const row = `${prefix}${file.path}:${line.n}:${text}`;
      if (chars + row.length + 1 > cap) return out;
      out.push(row);
      chars += row.length + 1;
    }
  }
  return out;
}

describe("GrepMatches", () => {
  it("keeps what the capped answer shows of files found in any order, and counts everything", () => {
    const all = new Map<string, GrepFile>();
    const matches = new GrepMatches(2000, 4);
    let state = 7;
    const next = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const order = Array.from({ length: 300 }, (_, i) => `dir${i % 7}/f${(i * 37) % 300}.txt`);
    let lines = 0;
    for (const path of order) {
      const file = { path, lines: [] as GrepFile["lines"] };
      all.set(path, file);
      for (let n = 1; n <= 1 + Math.floor(next() * 5); n++) {
        const text = next() < 0.05 ? "x".repeat(900) : `line ${n} of ${path}`;
        file.lines.push({ n, text, match: true });
        matches.add(path, n, text, true);
        lines++;
      }
    }
    const full = [...all.values()].sort((a, b) => comparePaths(a.path, b.path));
    expect(rendered(matches.files, 2000, "src/")).toEqual(rendered(full, 2000, "src/"));
    expect(matches.matches).toBe(lines);
    expect(matches.fileCount).toBe(300);
  });

  it("holds about one answer's worth of lines, however many it is given", () => {
    const matches = new GrepMatches(30_000);
    for (let f = 0; f < 10_000; f++) for (let n = 1; n <= 50; n++) matches.add(`f${f}.txt`, n, `a matching line ${"y".repeat(2000)}`, true);
    const kept = matches.files.flatMap((file) => file.lines);
    const keptChars = kept.reduce((sum, line) => sum + line.text.length, 0);
    expect(kept.every((line) => line.text.length === MAX_GREP_LINE_CHARS + 1)).toBe(true);
    expect(keptChars).toBeLessThanOrEqual(30_000 + MAX_GREP_LINE_CHARS + 1);
    expect(matches.matches).toBe(500_000);
    expect(matches.fileCount).toBe(10_000);
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { closeSync, ftruncateSync, openSync, writeFileSync } from "node:fs";
import { tmpWorkspace, type TempWorkspace } from "../../helpers/workspace.js";
import { readLineWindow, type LineWindowRequest } from "../../../src/tools/shared/line-window.js";
import { MAX_LINE_CHARS, splitLines } from "../../../src/tools/shared/text-view.js";

let ws: TempWorkspace;
afterEach(() => ws?.cleanup());

const everything = { first: 1, last: Number.POSITIVE_INFINITY, keepChars: Number.POSITIVE_INFINITY };

// Both ways of reading give the same answer: through the thread pool (no size given, or a file
// past SYNC_READ_MAX_BYTES) and synchronously (a size at most that; 0 forces it for any file).
describe.each([
  ["through the thread pool", undefined],
  ["synchronously", 0],
] as const)("readLineWindow %s", (_, size) => {
  const readLineWindowAs = (file: string, request: LineWindowRequest) => readLineWindow(file, request, size);

  it("counts and splits lines as splitLines does (LF, CRLF, no phantom last line, blank files)", async () => {
    ws = tmpWorkspace();
    for (const text of ["", "\n", "a", "a\n", "a\nb", "a\r\nb\r\n", "\n\nx\n\n", "ж😀\r\n\r\nend", " \t\n\u3000\n"]) {
      const file = ws.write("t.txt", text);
      const read = await readLineWindowAs(file, everything);
      const expected = splitLines(text);
      expect(read.totalLines, JSON.stringify(text)).toBe(expected.length);
      expect(read.lines.map((line) => line.text)).toEqual(expected);
      expect(read.lines.map((line) => line.chars)).toEqual(expected.map((line) => line.length));
      expect(read.blank, JSON.stringify(text)).toBe(text.trim() === "");
    }
  });

  it("keeps only the window's lines and stops keeping once they pass keepChars, but counts every line", async () => {
    ws = tmpWorkspace();
    const file = ws.write("rows.txt", Array.from({ length: 100_000 }, (_, i) => `row ${i + 1}`).join("\n"));
    const window = await readLineWindowAs(file, { first: 500, last: 520, keepChars: Number.POSITIVE_INFINITY });
    expect(window.lines.map((line) => line.text)).toEqual(Array.from({ length: 21 }, (_, i) => `row ${500 + i}`));
    expect(window.totalLines).toBe(100_000);
    const capped = await readLineWindowAs(file, { first: 1, last: Number.POSITIVE_INFINITY, keepChars: 1000 });
    const measured = capped.lines.reduce((sum, line) => sum + line.chars + 7, 0);
    expect(measured).toBeGreaterThan(1000);
    expect(measured - (capped.lines.at(-1)!.chars + 7)).toBeLessThanOrEqual(1000);
    expect(capped.totalLines).toBe(100_000);
  });

  it("keeps the first MAX_LINE_CHARS chars of an endless line and its full length, whatever the chunking", async () => {
    ws = tmpWorkspace();
    const long = "é".repeat(3 * 1024 * 1024); // 6 MB of two-byte chars in one line: split over many reads, some mid-character
    const file = ws.write("long.txt", `short\n${long}\r\nafter`);
    const read = await readLineWindowAs(file, everything);
    expect(read.totalLines).toBe(3);
    expect(read.lines[0]).toEqual({ text: "short", chars: 5 });
    expect(read.lines[1]).toEqual({ text: "é".repeat(MAX_LINE_CHARS), chars: long.length });
    expect(read.lines[2]).toEqual({ text: "after", chars: 5 });
  });

  it("reads a file whose hole is longer than any string (sparse, no newline) without holding it", async () => {
    ws = tmpWorkspace();
    const file = ws.write("sparse.txt", "some text\n".repeat(820)); // 8,200 bytes: the binary sniff sees text
    const fd = openSync(file, "r+");
    ftruncateSync(fd, 600 * 1024 * 1024); // past V8's longest string (~512 MB): a whole-line reader throws here
    closeSync(fd);
    const read = await readLineWindowAs(file, everything);
    expect(read.binary).toBe(false);
    expect(read.totalLines).toBe(821);
    expect(read.lines[820]!.chars).toBe(600 * 1024 * 1024 - 8200);
    expect(read.lines[820]!.text).toBe("\0".repeat(MAX_LINE_CHARS));
    expect(read.bytesRead).toBe(600 * 1024 * 1024);
  });

  it("says binary after the first chunk when the first 8 KB hold a NUL, reading no further", async () => {
    ws = tmpWorkspace();
    const file = ws.write("blob.txt", Buffer.concat([Buffer.from("ab\0cd"), Buffer.alloc(1024 * 1024, 97)]));
    const read = await readLineWindowAs(file, everything);
    expect(read.binary).toBe(true);
    expect(read.bytesRead).toBeLessThanOrEqual(64 * 1024);
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { lstatSync, readFileSync, statSync, utimesSync } from "node:fs";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";
import { Resources } from "../../../src/core/resources.js";
import { readFile } from "../../../src/tools/builtin/read-file.js";
import { editFile } from "../../../src/tools/builtin/edit-file.js";

let harness: ToolHarness;
afterEach(async () => harness?.close());

async function withRead(files: Record<string, string>, name: string): Promise<string> {
  harness = await createToolHarness({ files });
  const file = harness.ws.path(name);
  await harness.call(readFile, { file });
  return file;
}

describe("edit_file", () => {
  it("replaces a unique exact match and confirms with a numbered snippet", async () => {
    const file = await withRead({ "a.ts": "const a = 1;\nconst b = 2;\nconst c = 3;\n" }, "a.ts");
    const result = await harness.call(editFile, { file, old_string: "const b = 2;", new_string: "const b = 20;" });
    expect(result.success).toBe(true);
    expect(result.output).toBe(`Edited ${file}: 1 replacement.\n   1 | const a = 1;\n   2 | const b = 20;\n   3 | const c = 3;`);
    expect(readFileSync(file, "utf8")).toBe("const a = 1;\nconst b = 20;\nconst c = 3;\n");
  });

  it("refuses a non-unique match with the count and line numbers, unless replace_all", async () => {
    const file = await withRead({ "a.txt": "x\nfoo\ny\nfoo\nfoo\n" }, "a.txt");
    const result = await harness.call(editFile, { file, old_string: "foo", new_string: "bar" });
    expect(result.output).toMatch(/^Error: MATCH_NOT_UNIQUE — old_string appears 3 times in .* \(lines 2, 4, 5\)/);
    expect(readFileSync(file, "utf8")).toBe("x\nfoo\ny\nfoo\nfoo\n");
    const all = await harness.call(editFile, { file, old_string: "foo", new_string: "bar", replace_all: true });
    expect(all.output).toMatch(/: 3 replacements\./);
    expect(readFileSync(file, "utf8")).toBe("x\nbar\ny\nbar\nbar\n");
  });

  it("refuses an old_string found a million times by listing the first 20 lines, without numbering every occurrence", async () => {
    const file = await withRead({ "a.txt": "a\n".repeat(1_000_000) }, "a.txt");
    const result = await harness.call(editFile, { file, old_string: "a", new_string: "b" });
    const first20 = Array.from({ length: 20 }, (_, i) => i + 1).join(", ");
    expect(result.output).toMatch(new RegExp(`^Error: MATCH_NOT_UNIQUE — old_string appears 1000000 times in .* \\(lines ${first20}, …\\)`));
    const all = await harness.call(editFile, { file, old_string: "a", new_string: "b", replace_all: true });
    expect(all.output).toMatch(/: 1000000 replacements\./);
    expect(readFileSync(file, "utf8")).toBe("b\n".repeat(1_000_000));
  });

  it("confirms with the same snippet wherever the edit falls (first lines, last lines, multi-line, CRLF)", async () => {
    const lines = Array.from({ length: 40 }, (_, i) => `line ${i + 1} text`);
    const cases: [string, string, string][] = [
      [lines.join("\n"), "line 1 text", "first\nline"],
      [lines.join("\n"), "line 2 text", "second"],
      [lines.join("\n") + "\n", "line 40 text", "last\nand more\nlines"],
      [lines.join("\n"), "line 20 text\nline 21 text", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn"],
      [lines.join("\r\n") + "\r\n", "line 39 text\nline 40 text", "x\ny"],
      ["only line", "only", "just one"],
    ];
    for (const [before, oldString, newString] of cases) {
      const file = await withRead({ "f.txt": before }, "f.txt");
      const result = await harness.call(editFile, { file, old_string: oldString, new_string: newString });
      const after = readFileSync(file, "utf8");
      // The snippet as read_file numbers the edited file: from 2 lines before the edit to 2 after it, at most 12 lines.
      const crlf = before.includes("\r\n") && !before.includes(oldString);
      const inserted = crlf ? newString.replace(/\n/g, "\r\n") : newString;
      const at = after.indexOf(inserted);
      const all = after.split("\n").map((line) => line.replace(/\r$/, ""));
      if (after.endsWith("\n")) all.pop();
      const first = after.slice(0, at).split("\n").length;
      const last = first + inserted.split("\n").length - 1 - (inserted.endsWith("\n") ? 1 : 0);
      const from = first - 2;
      const to = Math.min(last + 2, from + 11);
      const expected = all
        .map((line, i) => `${String(i + 1).padStart(4)} | ${line}`)
        .slice(Math.max(0, from - 1), to)
        .join("\n");
      expect(result.output, JSON.stringify([oldString, newString])).toBe(`Edited ${file}: 1 replacement.\n${expected}`);
      await harness.close();
    }
  });

  it("explains a miss with the closest region, line-numbered, and a whitespace hint", async () => {
    const file = await withRead({ "a.py": "def f():\n\treturn 1\n\ndef g():\n\treturn 2\n" }, "a.py");
    const result = await harness.call(editFile, { file, old_string: "def g():\n    return 2", new_string: "def g():\n    return 3" });
    expect(result.output).toMatch(/^Error: MATCH_NOT_FOUND — old_string not found in /);
    expect(result.output).toContain("Closest match (lines 4-5):");
    expect(result.output).toContain("   4 | def g():\n   5 | \treturn 2");
    expect(result.output).toContain("differs only in whitespace");
  });

  it("points out read_file line-number prefixes copied into old_string", async () => {
    const file = await withRead({ "a.txt": "alpha\nbeta\n" }, "a.txt");
    const result = await harness.call(editFile, { file, old_string: "   2 | beta", new_string: "gamma" });
    expect(result.output).toMatch(/^Error: MATCH_NOT_FOUND/);
    expect(result.output).toContain("line-number prefixes");
  });

  it("edits a CRLF file from LF strings and keeps CRLF endings", async () => {
    const file = await withRead({ "win.txt": "one\r\ntwo\r\nthree\r\n" }, "win.txt");
    const result = await harness.call(editFile, { file, old_string: "one\ntwo", new_string: "one\n2\nzwei" });
    expect(result.success).toBe(true);
    expect(readFileSync(file, "utf8")).toBe("one\r\n2\r\nzwei\r\nthree\r\n");
  });

  it("matches CRLF strings against an LF file and writes LF", async () => {
    const file = await withRead({ "unix.txt": "one\ntwo\n" }, "unix.txt");
    expect((await harness.call(editFile, { file, old_string: "one\r\ntwo", new_string: "1\r\n2" })).success).toBe(true);
    expect(readFileSync(file, "utf8")).toBe("1\n2\n");
  });

  it("refuses identical old and new strings, and an empty old_string", async () => {
    const file = await withRead({ "a.txt": "abc" }, "a.txt");
    expect((await harness.call(editFile, { file, old_string: "abc", new_string: "abc" })).output).toMatch(/^Error: VALIDATION_ERROR — old_string and new_string are identical/);
    expect((await harness.call(editFile, { file, old_string: "", new_string: "x" })).output).toMatch(/^Error: VALIDATION_ERROR — /);
  });

  it("requires a prior read (FILE_NOT_READ) and answers FILE_NOT_FOUND for a missing file", async () => {
    harness = await createToolHarness({ files: { "a.txt": "abc" } });
    expect((await harness.call(editFile, { file: "a.txt", old_string: "a", new_string: "b" })).output).toMatch(/^Error: FILE_NOT_READ — /);
    expect((await harness.call(editFile, { file: "nope.txt", old_string: "a", new_string: "b" })).output).toMatch(/^Error: FILE_NOT_FOUND — .*write_file/);
  });

  it("detects a change on disk (FILE_CHANGED) and includes the current content", async () => {
    const file = await withRead({ "a.txt": "abc\n" }, "a.txt");
    harness.ws.write("a.txt", "abc\nadded elsewhere\n");
    const later = new Date(statSync(file).mtimeMs + 60_000);
    utimesSync(file, later, later);
    const result = await harness.call(editFile, { file, old_string: "abc", new_string: "xyz" });
    expect(result.output).toMatch(/^Error: FILE_CHANGED — File changed on disk since you last read it/);
    expect(result.output).toContain("   2 | added elsewhere");
    expect(readFileSync(file, "utf8")).toBe("abc\nadded elsewhere\n");
  });

  it("after a restart asks to re-read even though the DB marker exists", async () => {
    const file = await withRead({ "a.txt": "abc" }, "a.txt");
    const restarted = new Resources();
    const result = await harness.call(editFile, { file, old_string: "abc", new_string: "xyz" }, { session: restarted });
    expect(result.output).toMatch(/^Error: FILE_NOT_READ — .*restarted/);
    await restarted.dispose();
  });

  it("allows consecutive edits without re-reading (own writes refresh the snapshot)", async () => {
    const file = await withRead({ "a.txt": "1 2 3" }, "a.txt");
    expect((await harness.call(editFile, { file, old_string: "1", new_string: "one" })).success).toBe(true);
    expect((await harness.call(editFile, { file, old_string: "2", new_string: "two" })).success).toBe(true);
    expect(readFileSync(file, "utf8")).toBe("one two 3");
  });

  it("edits through a symlink and keeps the link", async () => {
    harness = await createToolHarness({ files: { "real.txt": "hello" } });
    const link = harness.ws.symlink("link.txt", harness.ws.path("real.txt"));
    await harness.call(readFile, { file: link });
    expect((await harness.call(editFile, { file: link, old_string: "hello", new_string: "bye" })).success).toBe(true);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(harness.ws.path("real.txt"), "utf8")).toBe("bye");
  });

  it("treats $-patterns in new_string literally", async () => {
    const file = await withRead({ "a.txt": "price" }, "a.txt");
    await harness.call(editFile, { file, old_string: "price", new_string: "$& $1 $$" });
    expect(readFileSync(file, "utf8")).toBe("$& $1 $$");
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { closeSync, ftruncateSync, mkdirSync, openSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";
import { readFile } from "../../../src/tools/builtin/read-file.js";
import { READ_TRACKER_KEY, type ReadTracker } from "../../../src/tools/shared/read-tracker.js";

let harness: ToolHarness;
afterEach(async () => harness?.close());

const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4cd0000000049454e44ae426082", "hex");

describe("read_file", () => {
  it("numbers lines as documented (`   1 | {`) and keeps tabs as real tabs", async () => {
    harness = await createToolHarness({ files: { "package.json": '{\n\t"name": "veilcli"\n}\n' } });
    const result = await harness.call(readFile, { file: harness.ws.path("package.json") });
    expect(result.success).toBe(true);
    expect(result.output).toBe('   1 | {\n   2 | \t"name": "veilcli"\n   3 | }');
  });

  it("shows CRLF files without the carriage returns", async () => {
    harness = await createToolHarness({ files: { "win.txt": "one\r\ntwo\r\n" } });
    expect((await harness.call(readFile, { file: "win.txt" })).output).toBe("   1 | one\n   2 | two");
  });

  it("accepts a workspace-relative path", async () => {
    harness = await createToolHarness({ files: { "src/a.txt": "alpha\n" } });
    const result = await harness.call(readFile, { file: "src/a.txt" });
    expect(result.output).toBe("   1 | alpha");
  });

  it("shows the first 2000 lines with read_file's footer when neither offset nor limit is given", async () => {
    const text = Array.from({ length: 2500 }, (_, i) => `l${i + 1}`).join("\n");
    harness = await createToolHarness({ files: { "big.txt": text } });
    const result = await harness.call(readFile, { file: harness.ws.path("big.txt") });
    expect(result.output).toContain("2000 | l2000");
    expect(result.output).not.toContain("l2001");
    expect(result.output.endsWith("\n\n(File has 2500 total lines. Showing first 2000. Use offset/limit to read more.)")).toBe(true);
  });

  it("applies offset/limit without the 2000-line footer", async () => {
    const text = Array.from({ length: 2500 }, (_, i) => `l${i + 1}`).join("\n");
    harness = await createToolHarness({ files: { "big.txt": text } });
    const window = await harness.call(readFile, { file: harness.ws.path("big.txt"), offset: 2100, limit: 2 });
    expect(window.output).toBe("2100 | l2100\n2101 | l2101");
    const tail = await harness.call(readFile, { file: harness.ws.path("big.txt"), offset: 2499 });
    expect(tail.output).toBe("2499 | l2499\n2500 | l2500");
    expect(tail.output).not.toContain("Showing first");
  });

  it("returns the exact reminder for empty and whitespace-only files", async () => {
    harness = await createToolHarness({ files: { "empty.txt": "", "blank.txt": "  \n\t\n" } });
    for (const name of ["empty.txt", "blank.txt"]) {
      const path = harness.ws.path(name);
      const result = await harness.call(readFile, { file: path });
      expect(result.output).toBe(`<system-reminder>The file ${path} exists but has empty contents.</system-reminder>`);
    }
  });

  it("describes binary files (NUL bytes or a binary extension) instead of printing them", async () => {
    harness = await createToolHarness({ files: { "data.bin": Buffer.from([1, 2, 0, 3]), "x.pdf": Buffer.alloc(1258291, 65), "blob.txt": Buffer.from("ab\0cd") } });
    expect((await harness.call(readFile, { file: harness.ws.path("x.pdf") })).output).toBe("Binary file: x.pdf (1.2 MB). Cannot display as text.");
    expect((await harness.call(readFile, { file: harness.ws.path("data.bin") })).output).toBe("Binary file: data.bin (4 B). Cannot display as text.");
    expect((await harness.call(readFile, { file: harness.ws.path("blob.txt") })).output).toBe("Binary file: blob.txt (5 B). Cannot display as text.");
  });

  it("attaches an image when the model accepts images; the stored text is the description", async () => {
    harness = await createToolHarness({ files: { "photo.png": PNG }, model: { input_modalities: ["text", "image"] } });
    const result = await harness.call(readFile, { file: harness.ws.path("photo.png") });
    expect(result.output).toBe(`Image file: photo.png (${PNG.length} B)`);
    expect(result.attachments).toEqual([{ type: "image", media_type: "image/png", data: PNG.toString("base64") }]);
  });

  it("falls back to text when the model has no image input, with KB sizes as documented", async () => {
    harness = await createToolHarness({ files: { "photo.jpg": Buffer.alloc(45 * 1024, 1), "shot.png": Buffer.alloc(131584, 1) } });
    const jpg = await harness.call(readFile, { file: harness.ws.path("photo.jpg") });
    expect(jpg.output).toBe("Image file: photo.jpg (45 KB). Current model does not support image input.");
    expect(jpg.attachments).toBeUndefined();
    const png = await harness.call(readFile, { file: harness.ws.path("shot.png") });
    expect(png.output).toBe("Image file: shot.png (128.5 KB). Current model does not support image input.");
  });

  it("attaches audio only for audio-capable models", async () => {
    const wav = Buffer.alloc(1258291, 7);
    harness = await createToolHarness({ files: { "clip.wav": wav }, model: { input_modalities: ["text", "audio"] } });
    const result = await harness.call(readFile, { file: harness.ws.path("clip.wav") });
    expect(result.output).toBe("Audio file: clip.wav (1.2 MB)");
    expect(result.attachments?.[0]).toMatchObject({ type: "audio", media_type: "audio/wav" });
    expect(result.attachments?.[0]?.data?.length).toBe(Math.ceil(wav.length / 3) * 4);
    const textOnly = await harness.call(readFile, { file: harness.ws.path("clip.wav") }, { model: { input_modalities: ["text"], context_window: 1000 } });
    expect(textOnly.output).toBe("Audio file: clip.wav (1.2 MB). Current model does not support audio input.");
  });

  it("describes images over 20 MB without attaching them", async () => {
    harness = await createToolHarness({ files: { "huge.png": Buffer.alloc(21 * 1024 * 1024, 1) }, model: { input_modalities: ["text", "image"] } });
    const result = await harness.call(readFile, { file: harness.ws.path("huge.png") });
    expect(result.output).toBe("Image file: huge.png (21 MB). Too large to attach (over 20 MB).");
    expect(result.attachments).toBeUndefined();
  });

  it("answers FILE_NOT_FOUND, IS_A_DIRECTORY (pointing at list_dir) and BROKEN_SYMLINK", async () => {
    harness = await createToolHarness({ files: { "dir/a.txt": "a" } });
    symlinkSync(harness.ws.path("nowhere"), harness.ws.path("dangling"));
    const missing = await harness.call(readFile, { file: harness.ws.path("nope.txt") });
    expect(missing.output).toMatch(/^Error: FILE_NOT_FOUND — /);
    const dir = await harness.call(readFile, { file: harness.ws.path("dir") });
    expect(dir.output).toMatch(/^Error: IS_A_DIRECTORY — .*list_dir/);
    const broken = await harness.call(readFile, { file: harness.ws.path("dangling") });
    expect(broken.output).toMatch(/^Error: BROKEN_SYMLINK — /);
  });

  it("refuses the runtime's secret and database files, also through a symlink", async () => {
    harness = await createToolHarness({ files: { ".veil/secret": "s3cr3t" } });
    harness.ws.symlink("innocent.txt", harness.ws.path(".veil/secret"));
    for (const file of [".veil/secret", ".veil/veil.db", harness.ws.path(".veil/veil.db"), "innocent.txt"]) {
      const result = await harness.call(readFile, { file });
      expect(result.output).toMatch(/^Error: PATH_PROTECTED — /);
      expect(result.output).not.toContain("s3cr3t");
    }
  });

  it("records the DB read marker and the mtime snapshot under the real path", async () => {
    harness = await createToolHarness({ files: { "real.txt": "x\n" } });
    harness.ws.symlink("link.txt", harness.ws.path("real.txt"));
    await harness.call(readFile, { file: harness.ws.path("link.txt") });
    const real = realpathSync(harness.ws.path("real.txt"));
    expect(await harness.store.hasRead(harness.sessionId, real)).toBe(true);
    const tracker = harness.sessionResources.peek<ReadTracker>(READ_TRACKER_KEY);
    expect(tracker?.get(real)).toBeGreaterThan(0);
  });

  it("streams large text files and still counts every line", async () => {
    harness = await createToolHarness();
    mkdirSync(harness.ws.path("logs"));
    const line = "x".repeat(99);
    const count = 100_000; // 10 MB: over the streaming threshold
    writeFileSync(harness.ws.path("logs/big.log"), Array.from({ length: count }, (_, i) => `${i + 1} ${line}`).join("\n"));
    const head = await harness.call(readFile, { file: "logs/big.log", offset: 99_999, limit: 5 });
    expect(head.output).toBe(`99999 | 99999 ${line}\n100000 | 100000 ${line}`);
    const first = await harness.call(readFile, { file: "logs/big.log" });
    expect(first.output).toContain(`   1 | 1 ${line}`);
    expect(first.output).toContain(`2000 | 2000 ${line}`);
    expect(first.output.endsWith("\n\n(File has 100000 total lines. Showing first 2000. Use offset/limit to read more.)")).toBe(true);
    const wide = await harness.call(readFile, { file: "logs/big.log", offset: 1, limit: 50_000 });
    expect(wide.output).toMatch(/\n\n\(Output capped at 256 KB: showing lines 1-\d+ of 100000\. Use offset\/limit to read more\.\)$/);
    expect(Buffer.byteLength(wide.output)).toBeLessThanOrEqual(256 * 1024 + 200);
  });

  it("shows all 2000 default lines of a file of short lines (no hidden 30,000-char cap)", async () => {
    const text = Array.from({ length: 2100 }, (_, i) => `const value${i + 1} = ${i};`).join("\n");
    harness = await createToolHarness({ files: { "short.ts": text } });
    const result = await harness.call(readFile, { file: "short.ts" });
    const lines = result.output.split("\n");
    expect(lines[1999]).toBe("2000 | const value2000 = 1999;");
    expect(result.output.length).toBeGreaterThan(30_000);
    expect(result.output).not.toContain("Output capped");
    expect(result.output.endsWith("\n\n(File has 2100 total lines. Showing first 2000. Use offset/limit to read more.)")).toBe(true);
  });

  it("lifts the 2000-line cap when offset or limit is given", async () => {
    const text = Array.from({ length: 3500 }, (_, i) => `row ${i + 1}`).join("\n");
    harness = await createToolHarness({ files: { "rows.txt": text } });
    const limited = await harness.call(readFile, { file: "rows.txt", limit: 3000 });
    expect(limited.output.split("\n")).toHaveLength(3000);
    expect(limited.output.endsWith("3000 | row 3000")).toBe(true);
    const fromOffset = await harness.call(readFile, { file: "rows.txt", offset: 2 });
    expect(fromOffset.output.split("\n")).toHaveLength(3499);
    expect(fromOffset.output.endsWith("3500 | row 3500")).toBe(true);
  });

  it("caps one answer at 256 KB of UTF-8 and says so in the footer", async () => {
    const line = "ж".repeat(150); // 300 bytes, 150 chars
    const text = Array.from({ length: 2000 }, () => line).join("\n");
    harness = await createToolHarness({ files: { "wide.txt": text } });
    const result = await harness.call(readFile, { file: "wide.txt" });
    const match = /\n\n\(Output capped at 256 KB: showing lines 1-(\d+) of 2000\. Use offset\/limit to read more\.\)$/.exec(result.output);
    expect(match).not.toBeNull();
    const shown = Number(match![1]);
    const body = result.output.slice(0, match!.index);
    expect(Buffer.byteLength(body) + 1).toBeLessThanOrEqual(256 * 1024);
    expect(Buffer.byteLength(body) + 2 * 308).toBeGreaterThan(256 * 1024);
    expect(body.split("\n")).toHaveLength(shown);
    const next = await harness.call(readFile, { file: "wide.txt", offset: shown + 1, limit: 5 });
    expect(next.output.startsWith(`${String(shown + 1).padStart(4)} | ${line}`)).toBe(true);
  });

  it("answers a file with a line longer than any string (a sparse file's hole) with the line cut, instead of crashing", async () => {
    harness = await createToolHarness({ files: { "sparse.log": "first line\n".repeat(800) } }); // 8,800 bytes of text, then the hole
    const fd = openSync(harness.ws.path("sparse.log"), "r+");
    ftruncateSync(fd, 600 * 1024 * 1024);
    closeSync(fd);
    const result = await harness.call(readFile, { file: "sparse.log", offset: 800, limit: 1_000_000_000 });
    const hole = 600 * 1024 * 1024 - 8800;
    expect(result.output).toBe(` 800 | first line\n 801 | ${"\0".repeat(2000)}… [line truncated: ${hole} chars]`);
  });

  it("cuts a line of a small file the same way as one of a big file", async () => {
    harness = await createToolHarness({ files: { "min.js": `${"x".repeat(5000)}\nshort\n` } });
    const result = await harness.call(readFile, { file: "min.js" });
    expect(result.output).toBe(`   1 | ${"x".repeat(2000)}… [line truncated: 5000 chars]\n   2 | short`);
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { atomicWrite, WRITE_SLICE_CHARS } from "../../../src/tools/shared/atomic-write.js";
import { isVeilError } from "../../../src/errors.js";

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const tempFiles = (folder: string) => readdirSync(folder).filter((name) => name.endsWith(".veil-tmp"));

describe("atomicWrite", () => {
  it("replaces the content, keeps the mode and leaves no temp file", async () => {
    dir = mkdtempSync(join(tmpdir(), "veil-aw-"));
    const file = join(dir, "a.txt");
    writeFileSync(file, "old");
    chmodSync(file, 0o640);
    await atomicWrite(file, "new content");
    expect(readFileSync(file, "utf8")).toBe("new content");
    expect(statSync(file).mode & 0o777).toBe(0o640);
    expect(tempFiles(dir)).toEqual([]);
  });

  it("removes its temp file when the final rename fails", async () => {
    dir = mkdtempSync(join(tmpdir(), "veil-aw-"));
    const target = join(dir, "occupied");
    mkdirSync(join(target, "child"), { recursive: true }); // rename(file, non-empty dir) fails
    await expect(atomicWrite(target, "x")).rejects.toSatisfy((error) => isVeilError(error) && error.code === "IS_A_DIRECTORY");
    expect(tempFiles(dir)).toEqual([]);
  });

  it("creates missing parent folders", async () => {
    dir = mkdtempSync(join(tmpdir(), "veil-aw-"));
    await atomicWrite(join(dir, "x/y/z.txt"), "deep");
    expect(readFileSync(join(dir, "x/y/z.txt"), "utf8")).toBe("deep");
  });
});

describe("atomicWrite on a full disk", () => {
  let mount: string | undefined;
  let skipReason = "";

  beforeAll(() => {
    const point = mkdtempSync(join(tmpdir(), "veil-tmpfs-"));
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", point], { stdio: "pipe" });
      mount = point;
    } catch (error) {
      rmSync(point, { recursive: true, force: true });
      skipReason = `cannot mount a tmpfs here (${(error as Error).message.split("\n")[0]})`;
    }
  });

  afterAll(() => {
    if (!mount) return;
    execFileSync("umount", [mount], { stdio: "pipe" });
    rmSync(mount, { recursive: true, force: true });
  });

  it("leaves the old content and no temp file when the new content does not fit", async (test) => {
    if (!mount) {
      console.warn(`skipping full-disk test: ${skipReason}`);
      test.skip();
      return;
    }
    dir = mkdtempSync(join(tmpdir(), "veil-aw-unused-"));
    const file = join(mount, "keep.txt");
    writeFileSync(file, "precious");
    const error = await atomicWrite(file, Buffer.alloc(256 * 1024, 120)).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(isVeilError(error) && error.message).toMatch(/No space left/);
    expect(readFileSync(file, "utf8")).toBe("precious");
    expect(tempFiles(mount)).toEqual([]);
  });

  it("writes text in slices without splitting a character, and parts one after another", async () => {
    dir = mkdtempSync(join(tmpdir(), "veil-aw-"));
    const file = join(dir, "astral.txt");
    // 1 + 2 × 400,000 UTF-16 units: the slice boundaries fall inside surrogate pairs.
    const text = `a${"😀".repeat(400_000)}`;
    await atomicWrite(file, text);
    expect(readFileSync(file, "utf8")).toBe(text);
    await atomicWrite(file, ["one ", "😀".repeat(WRITE_SLICE_CHARS), "", " three"]);
    expect(readFileSync(file, "utf8")).toBe(`one ${"😀".repeat(WRITE_SLICE_CHARS)} three`);
  });
});

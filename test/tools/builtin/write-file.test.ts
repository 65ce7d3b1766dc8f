import { afterEach, describe, expect, it } from "vitest";
import { chmodSync, lstatSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, utimesSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";
import { Resources } from "../../../src/core/resources.js";
import { readFile } from "../../../src/tools/builtin/read-file.js";
import { writeFile } from "../../../src/tools/builtin/write-file.js";

let harness: ToolHarness;
const extraDirs: string[] = [];
afterEach(async () => {
  await harness?.close();
  for (const dir of extraDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function outsideDir(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "veil-outside-")));
  extraDirs.push(dir);
  return dir;
}

function moveMtime(path: string, deltaMs: number): void {
  const stats = statSync(path);
  const when = new Date(stats.mtimeMs + deltaMs);
  utimesSync(path, when, when);
}

describe("write_file", () => {
  it("creates a new file and its parent folders without a prior read", async () => {
    harness = await createToolHarness();
    const file = harness.ws.path("deep/er/new.txt");
    const result = await harness.call(writeFile, { file, content: "hello\nworld\n" });
    expect(result.success).toBe(true);
    expect(result.output).toBe(`Created ${file}: 2 lines, 12 B.`);
    expect(readFileSync(file, "utf8")).toBe("hello\nworld\n");
  });

  it("refuses to overwrite an existing file that was not read (FILE_NOT_READ)", async () => {
    harness = await createToolHarness({ files: { "a.txt": "old" } });
    const result = await harness.call(writeFile, { file: harness.ws.path("a.txt"), content: "new" });
    expect(result.output).toMatch(/^Error: FILE_NOT_READ — .*read_file/);
    expect(readFileSync(harness.ws.path("a.txt"), "utf8")).toBe("old");
  });

  it("overwrites after a read, and the model's own write does not trip the gate", async () => {
    harness = await createToolHarness({ files: { "a.txt": "old" } });
    const file = harness.ws.path("a.txt");
    await harness.call(readFile, { file });
    expect((await harness.call(writeFile, { file, content: "one" })).output).toMatch(/^Wrote /);
    // Even if the clock moved, the second write compares against the mtime of our own write.
    expect((await harness.call(writeFile, { file, content: "two" })).success).toBe(true);
    expect(readFileSync(file, "utf8")).toBe("two");
  });

  it("rejects a write when the file changed on disk since the read, and shows the current content", async () => {
    harness = await createToolHarness({ files: { "a.txt": "v1\n" } });
    const file = harness.ws.path("a.txt");
    await harness.call(readFile, { file });
    harness.ws.write("a.txt", "external\tchange\n");
    moveMtime(file, 5_000);
    const result = await harness.call(writeFile, { file, content: "mine" });
    expect(result.output).toMatch(/^Error: FILE_CHANGED — File changed on disk since you last read it/);
    expect(result.output).toContain("   1 | external\tchange");
    expect(readFileSync(file, "utf8")).toBe("external\tchange\n");
    // The error showed the current version, so the retry goes through (no loop).
    expect((await harness.call(writeFile, { file, content: "mine" })).success).toBe(true);
  });

  it("ignores mtime differences within the 10 ms fuzz", async () => {
    harness = await createToolHarness({ files: { "a.txt": "v1" } });
    const file = harness.ws.path("a.txt");
    await harness.call(readFile, { file });
    moveMtime(file, 8);
    expect((await harness.call(writeFile, { file, content: "v2" })).success).toBe(true);
  });

  it("after a restart (marker in the DB, no mtime snapshot) asks to re-read", async () => {
    harness = await createToolHarness({ files: { "a.txt": "v1" } });
    const file = harness.ws.path("a.txt");
    await harness.call(readFile, { file });
    const restarted = new Resources(); // fresh per-session resources, same store
    const blocked = await harness.call(writeFile, { file, content: "v2" }, { session: restarted });
    expect(blocked.output).toMatch(/^Error: FILE_NOT_READ — .*restarted.*Re-read it with read_file/);
    await harness.call(readFile, { file }, { session: restarted });
    expect((await harness.call(writeFile, { file, content: "v2" }, { session: restarted })).success).toBe(true);
    await restarted.dispose();
  });

  it("writes through a symlink: the target changes and the link stays a link", async () => {
    harness = await createToolHarness({ files: { "target.txt": "old" } });
    const link = harness.ws.symlink("link.txt", harness.ws.path("target.txt"));
    await harness.call(readFile, { file: link });
    const result = await harness.call(writeFile, { file: link, content: "new" });
    expect(result.success).toBe(true);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(harness.ws.path("target.txt"), "utf8")).toBe("new");
  });

  it("refuses a broken symlink with BROKEN_SYMLINK and leaves it alone", async () => {
    harness = await createToolHarness();
    const link = harness.ws.symlink("dangling.txt", harness.ws.path("missing.txt"));
    const result = await harness.call(writeFile, { file: link, content: "x" });
    expect(result.output).toMatch(/^Error: BROKEN_SYMLINK — /);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(existsSync(harness.ws.path("missing.txt"))).toBe(false);
  });

  it("refuses paths outside the workspace, including through a symlinked folder", async () => {
    harness = await createToolHarness();
    const outside = outsideDir();
    const direct = await harness.call(writeFile, { file: join(outside, "x.txt"), content: "x" });
    expect(direct.output).toMatch(/^Error: PATH_OUTSIDE_WORKSPACE — /);
    symlinkSync(outside, harness.ws.path("escape"));
    const smuggled = await harness.call(writeFile, { file: harness.ws.path("escape/sub/x.txt"), content: "x" });
    expect(smuggled.output).toMatch(/^Error: PATH_OUTSIDE_WORKSPACE — .*resolves to/);
    const dotdot = await harness.call(writeFile, { file: "../x.txt", content: "x" });
    expect(dotdot.output).toMatch(/^Error: PATH_OUTSIDE_WORKSPACE — /);
    expect(readdirSync(outside)).toEqual([]);
  });

  it("allows writes under settings.files.writeRoots", async () => {
    const extra = outsideDir();
    harness = await createToolHarness({ settings: { files: { writeRoots: [extra] } } });
    const result = await harness.call(writeFile, { file: join(extra, "notes/x.txt"), content: "ok" });
    expect(result.success).toBe(true);
    expect(readFileSync(join(extra, "notes/x.txt"), "utf8")).toBe("ok");
  });

  it("refuses the runtime's own files with PATH_PROTECTED", async () => {
    harness = await createToolHarness({ files: { "notes.txt": "n" } });
    for (const file of [".veil/agents/a/agent.json", ".veil/tools/t/index.js", ".veil/settings.json", ".veil/models.json", ".veil/veil.db", ".veil/veil.db-wal", ".veil/secret"]) {
      const result = await harness.call(writeFile, { file, content: "pwned" });
      expect(result.output, file).toMatch(/^Error: PATH_PROTECTED — /);
    }
    // A symlink pointing at a protected file is refused too.
    harness.ws.write(".veil/settings.json", "{}");
    harness.ws.symlink("settings-link.json", harness.ws.path(".veil/settings.json"));
    await harness.call(readFile, { file: "settings-link.json" });
    expect((await harness.call(writeFile, { file: "settings-link.json", content: "pwned" })).output).toMatch(/^Error: PATH_PROTECTED — /);
    expect(readFileSync(harness.ws.path(".veil/settings.json"), "utf8")).toBe("{}");
    // Other .veil content stays writable.
    expect((await harness.call(writeFile, { file: ".veil/memory/MEMORY.md", content: "m" })).success).toBe(true);
  });

  it("preserves the mode of an existing file and leaves no temp files", async () => {
    harness = await createToolHarness({ files: { "run.sh": "#!/bin/sh\n" } });
    const file = harness.ws.path("run.sh");
    chmodSync(file, 0o751);
    await harness.call(readFile, { file });
    await harness.call(writeFile, { file, content: "#!/bin/sh\necho hi\n" });
    expect(statSync(file).mode & 0o777).toBe(0o751);
    expect(readdirSync(harness.ws.root).filter((name) => name.includes("veil-tmp"))).toEqual([]);
  });

  it("refuses to write over a directory", async () => {
    harness = await createToolHarness({ files: { "dir/a.txt": "a" } });
    expect((await harness.call(writeFile, { file: "dir", content: "x" })).output).toMatch(/^Error: IS_A_DIRECTORY — /);
  });
});

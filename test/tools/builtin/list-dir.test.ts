import { afterEach, describe, expect, it } from "vitest";
import { mkdirSync, writeFileSync } from "node:fs";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";
import { listDir } from "../../../src/tools/builtin/list-dir.js";

let harness: ToolHarness;
afterEach(async () => harness?.close());

describe("list_dir", () => {
  it("lists directories first with a trailing slash, then files with sizes", async () => {
    harness = await createToolHarness({ files: { "b.txt": "x".repeat(2048), "a.txt": "hi", "src/index.ts": "1", "lib/x.js": "" } });
    harness.ws.symlink("link.txt", harness.ws.path("a.txt"));
    harness.ws.symlink("gone", harness.ws.path("missing"));
    const result = await harness.call(listDir, { dir: harness.ws.root });
    const lines = result.output.split("\n");
    expect(lines[0]).toBe(`${harness.ws.root}/`);
    expect(lines.slice(1)).toEqual([
      ".veil/",
      "lib/",
      "src/",
      "a.txt  (2 B)",
      "b.txt  (2 KB)",
      `gone -> ${harness.ws.path("missing")} (broken)`,
      `link.txt -> ${harness.ws.path("a.txt")}  (2 B)`,
    ]);
  });

  it("walks subdirectories when recursive, listing .git and node_modules without descending", async () => {
    harness = await createToolHarness({ files: { "src/a.ts": "a", "src/deep/b.ts": "bb", "node_modules/pkg/index.js": "x", ".git/HEAD": "ref" } });
    const result = await harness.call(listDir, { dir: ".", recursive: true });
    const lines = result.output.split("\n").slice(1);
    expect(lines).toContain("src/deep/b.ts  (2 B)");
    expect(lines).toContain("node_modules/");
    expect(lines).toContain(".git/");
    expect(lines.some((line) => line.startsWith("node_modules/pkg"))).toBe(false);
    expect(lines.some((line) => line.startsWith(".git/HEAD"))).toBe(false);
    expect(result.output).toContain("(Contents not listed for: .git/, node_modules/)");
    expect(lines.indexOf("src/deep/")).toBeLessThan(lines.indexOf("src/a.ts  (1 B)"));
  });

  it("cuts the listing at 1000 entries and says so", async () => {
    harness = await createToolHarness();
    mkdirSync(harness.ws.path("many"));
    for (let i = 0; i < 1200; i++) writeFileSync(harness.ws.path(`many/f${String(i).padStart(4, "0")}.txt`), "");
    const result = await harness.call(listDir, { dir: "many" });
    expect(result.output.split("\n").filter((line) => line.startsWith("f"))).toHaveLength(1000);
    expect(result.output).toContain("(Listing cut at 1000 entries.");
  });

  it("shows the first 1000 of a huge folder in listing order, reading it as a stream (folders first, then by name)", async () => {
    harness = await createToolHarness();
    mkdirSync(harness.ws.path("huge"));
    // More than the entries the reader keeps between two sorts, in no particular order on disk.
    const names = Array.from({ length: 7000 }, (_, i) => `n${String((i * 7919) % 7000).padStart(4, "0")}`);
    for (const [i, name] of names.entries()) {
      if (i % 100 === 0) mkdirSync(harness.ws.path("huge", `d-${name}`));
      else writeFileSync(harness.ws.path("huge", name), "");
    }
    const result = await harness.call(listDir, { dir: "huge" });
    const lines = result.output.split("\n").slice(1, 1001);
    const dirs = names.filter((_, i) => i % 100 === 0).map((name) => `d-${name}/`).sort();
    const files = names.filter((_, i) => i % 100 !== 0).sort().map((name) => `${name}  (0 B)`);
    expect(lines).toEqual([...dirs, ...files].slice(0, 1000));
    expect(result.output.endsWith("(Listing cut at 1000 entries. List a subdirectory, or use glob to narrow it down.)")).toBe(true);
  });

  it("answers FILE_NOT_FOUND and NOT_A_DIRECTORY", async () => {
    harness = await createToolHarness({ files: { "a.txt": "a" } });
    expect((await harness.call(listDir, { dir: "nope" })).output).toMatch(/^Error: FILE_NOT_FOUND — No such directory/);
    expect((await harness.call(listDir, { dir: "a.txt" })).output).toMatch(/^Error: NOT_A_DIRECTORY — /);
  });

  it("says when a directory is empty", async () => {
    harness = await createToolHarness();
    mkdirSync(harness.ws.path("void"));
    expect((await harness.call(listDir, { dir: "void" })).output).toBe(`${harness.ws.path("void")}/\n(empty directory)`);
  });
});

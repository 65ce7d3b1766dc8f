import { afterEach, describe, expect, it } from "vitest";
import { utimesSync } from "node:fs";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";
import { glob } from "../../../src/tools/builtin/glob.js";
import { ripgrepPath } from "../../../src/tools/shared/ripgrep.js";

let harness: ToolHarness;
afterEach(async () => harness?.close());

const FALLBACK = { services: { ripgrepPath: null } };

const CORPUS: Record<string, string | Buffer> = {
  "a.ts": "a",
  "b.js": "b",
  "src/index.ts": "i",
  "src/util/strings.ts": "s",
  "src/util/strings.test.ts": "t",
  "src/util/readme.md": "r",
  "src/.hidden.ts": "h",
  ".github/workflows/ci.yml": "c",
  "node_modules/pkg/index.ts": "n",
  ".git/hooks/pre.ts": "g",
  "test/a.spec.ts": "x",
  "docs/Guide.MD": "d",
};

/** Gives each file a distinct mtime: later in the list = newer. */
function stampInOrder(h: ToolHarness, paths: string[]): void {
  const base = Date.now() / 1000 - 10_000;
  for (const path of Object.keys(CORPUS)) utimesSync(h.ws.path(path), base - 100, base - 100);
  paths.forEach((path, i) => utimesSync(h.ws.path(path), base + i * 10, base + i * 10));
}

async function both(input: Record<string, unknown>): Promise<{ rg: string; node: string }> {
  const rg = await harness.call(glob, input);
  const node = await harness.call(glob, input, FALLBACK);
  expect(node.details?.engine).toBe("node");
  return { rg: rg.output, node: node.output };
}

describe("glob", () => {
  it("sorts results by modification time, newest first, relative to cwd", async () => {
    harness = await createToolHarness({ files: CORPUS });
    stampInOrder(harness, ["src/util/strings.ts", "a.ts", "src/index.ts", "test/a.spec.ts"]);
    const result = await harness.call(glob, { pattern: "**/*.ts" });
    expect(result.output.split("\n").slice(0, 4)).toEqual(["test/a.spec.ts", "src/index.ts", "a.ts", "src/util/strings.ts"]);
  });

  it("matches `*.ts` only in the base folder and `src/*.ts` only in src", async () => {
    harness = await createToolHarness({ files: CORPUS });
    expect((await harness.call(glob, { pattern: "*.ts" })).output).toBe("a.ts");
    expect((await harness.call(glob, { pattern: "src/*.ts" })).output.split("\n").sort()).toEqual(["src/.hidden.ts", "src/index.ts"]);
  });

  it("includes hidden files, skips .git and node_modules unless the pattern names node_modules", async () => {
    harness = await createToolHarness({ files: CORPUS });
    const all = (await harness.call(glob, { pattern: "**/*.ts", limit: 100 })).output.split("\n");
    expect(all).toContain("src/.hidden.ts");
    expect(all.some((p) => p.startsWith("node_modules") || p.startsWith(".git/"))).toBe(false);
    expect((await harness.call(glob, { pattern: "node_modules/**/*.ts" })).output).toBe("node_modules/pkg/index.ts");
    expect((await harness.call(glob, { pattern: ".github/**" })).output).toBe(".github/workflows/ci.yml");
  });

  it("uses cwd for the base folder and paths", async () => {
    harness = await createToolHarness({ files: CORPUS });
    const result = await harness.call(glob, { pattern: "**/*.ts", cwd: "src/util" });
    expect(result.output.split("\n").sort()).toEqual(["strings.test.ts", "strings.ts"]);
  });

  it("says when results were cut by limit", async () => {
    harness = await createToolHarness({ files: CORPUS });
    const result = await harness.call(glob, { pattern: "**/*", limit: 3 });
    const [shown, footer] = result.output.split("\n\n");
    expect(shown!.split("\n")).toHaveLength(3);
    expect(footer).toBe("(Showing 3 of 10 matching files, newest first. Narrow the pattern or raise limit to see more.)");
  });

  it("reports no matches and a missing cwd", async () => {
    harness = await createToolHarness({ files: CORPUS });
    expect((await harness.call(glob, { pattern: "**/*.rs" })).output).toBe(`No files found matching "**/*.rs" in ${harness.ws.root}.`);
    expect((await harness.call(glob, { pattern: "*", cwd: "nope" })).output).toMatch(/^Error: FILE_NOT_FOUND — /);
  });

  it("gives the same results with rg and with the pure-Node walk", async () => {
    harness = await createToolHarness({ files: CORPUS });
    harness.ws.symlink("src/link.ts", harness.ws.path("a.ts"));
    harness.ws.symlink("linkdir", harness.ws.path("src"));
    stampInOrder(harness, Object.keys(CORPUS));
    const rg = await ripgrepPath(harness.context());
    if (rg) expect((await harness.call(glob, { pattern: "*" })).details?.engine).toBe("rg");
    else console.warn("rg is not installed: comparing the fallback with itself only");
    const patterns = ["**/*.ts", "*.ts", "src/**", "src/**/*.{ts,md}", "**/strings*", "**/*.MD", "**/[ab].*", "src/util/?????.ts", "**/!(*.test).ts", "docs/Guide.MD", "node_modules/**", "**/*"];
    for (const pattern of patterns) {
      const { rg: viaRg, node } = await both({ pattern, limit: 100 });
      expect(viaRg, pattern).toBe(node);
    }
    expect((await both({ pattern: "**/*.ts", cwd: "src", limit: 100 })).rg).toBe((await both({ pattern: "**/*.ts", cwd: "src", limit: 100 })).node);
  });

  it("keeps the `limit` newest with equal times ordered by path, and counts every match", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 40; i++) files[`d${i % 3}/${i % 2 ? "sub/" : ""}f${i}.txt`] = String(i);
    harness = await createToolHarness({ files });
    const base = Math.floor(Date.now() / 1000) - 10_000;
    // Four distinct times, ten files each: most of the order comes from the tie-break.
    const stamped = Object.keys(files).map((path, i) => ({ path, time: base + ((i * 7) % 4) * 60 }));
    for (const { path, time } of stamped) utimesSync(harness.ws.path(path), time, time);
    const expected = stamped
      .sort((a, b) => b.time - a.time || byComponents(a.path, b.path))
      .map((entry) => entry.path);
    for (const overrides of [{}, FALLBACK]) {
      for (const limit of [1, 2, 9, 10, 11, 39, 40, 41]) {
        const result = await harness.call(glob, { pattern: "**/*.txt", limit }, overrides);
        const [shown, footer] = result.output.split("\n\n");
        expect(shown!.split("\n"), `limit ${limit}`).toEqual(expected.slice(0, limit));
        expect(result.details?.total).toBe(40);
        if (limit < 40) expect(footer).toBe(`(Showing ${limit} of 40 matching files, newest first. Narrow the pattern or raise limit to see more.)`);
        else expect(footer).toBeUndefined();
      }
    }
  });

  it("leaves the runtime's database out of results and counts", async () => {
    harness = await createToolHarness({ files: { "notes.md": "n" } });
    const result = await harness.call(glob, { pattern: "**/*", limit: 100 });
    const fallback = await harness.call(glob, { pattern: "**/*", limit: 100 }, FALLBACK);
    expect(result.output).toBe("notes.md");
    expect(fallback.output).toBe("notes.md");
    expect((await harness.call(glob, { pattern: ".veil/veil.db" })).output).toMatch(/^No files found/);
  });
});

/** Component-by-component path order (a folder's contents sort where its name does). */
function byComponents(a: string, b: string): number {
  const pa = a.split("/");
  const pb = b.split("/");
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    if (pa[i] !== pb[i]) return pa[i]! < pb[i]! ? -1 : 1;
  }
  return pa.length - pb.length;
}

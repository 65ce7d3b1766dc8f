import { afterEach, describe, expect, it } from "vitest";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";
import { grep } from "../../../src/tools/builtin/grep.js";
import { ripgrepPath } from "../../../src/tools/shared/ripgrep.js";

let harness: ToolHarness;
afterEach(async () => harness?.close());

const FALLBACK = { services: { ripgrepPath: null } };
/** rg whenever it is installed, however small the tree. */
const RG_ALWAYS = { services: { grepInProcessFiles: 0 } };

const CORPUS: Record<string, string | Buffer> = {
  "top.ts": "import x from 'y';\nconst TODO = 1;\n// todo: lower\n",
  "notes.md": "line one\nTODO in markdown\nline three\nline four\nline five\nTODO again\nline seven\n",
  "src/a.ts": "function alpha() {\n  return 1; // TODO\n}\n",
  "src/deep/b.js": "const beta = 'a.b';\nconst gamma = 'axb';\n",
  "src/.env.ts": "SECRET_TODO=1\n",
  "src/win.txt": "first\r\nTODO crlf\r\nlast\r\n",
  "src/bin.dat": Buffer.from("TODO\0binary\n"),
  "node_modules/pkg/index.js": "// TODO in a dependency\n",
  ".git/config": "TODO git\n",
  ".veil/secret": "TODO secret\n",
};

describe("grep", () => {
  it("searches only the files directly in path by default, case-insensitively, as path:line:text", async () => {
    harness = await createToolHarness({ files: CORPUS });
    const result = await harness.call(grep, { pattern: "todo", path: "." });
    expect(result.output).toBe(["notes.md:2:TODO in markdown", "notes.md:6:TODO again", "top.ts:2:const TODO = 1;", "top.ts:3:// todo: lower"].join("\n"));
  });

  it("descends with recursive, skipping .git, node_modules, binary files and the runtime's secret", async () => {
    harness = await createToolHarness({ files: CORPUS });
    const result = await harness.call(grep, { pattern: "TODO", path: harness.ws.root, recursive: true, case_sensitive: true });
    expect(result.output).toBe(
      [
        "notes.md:2:TODO in markdown",
        "notes.md:6:TODO again",
        "src/.env.ts:1:SECRET_TODO=1",
        "src/a.ts:2:  return 1; // TODO",
        "src/win.txt:2:TODO crlf",
        "top.ts:2:const TODO = 1;",
      ].join("\n"),
    );
  });

  it("honours case_sensitive, fixed_strings and include", async () => {
    harness = await createToolHarness({ files: CORPUS });
    expect((await harness.call(grep, { pattern: "todo", path: ".", case_sensitive: true })).output).toBe("top.ts:3:// todo: lower");
    expect((await harness.call(grep, { pattern: "a.b", path: "src", recursive: true })).output).toBe("src/deep/b.js:1:const beta = 'a.b';\nsrc/deep/b.js:2:const gamma = 'axb';");
    expect((await harness.call(grep, { pattern: "a.b", path: "src", recursive: true, fixed_strings: true })).output).toBe("src/deep/b.js:1:const beta = 'a.b';");
    expect((await harness.call(grep, { pattern: "todo", path: ".", recursive: true, include: "*.md" })).output).toBe("notes.md:2:TODO in markdown\nnotes.md:6:TODO again");
  });

  it("prints context lines as path-line-text with -- between separate groups", async () => {
    harness = await createToolHarness({ files: CORPUS });
    const result = await harness.call(grep, { pattern: "TODO", path: "notes.md", context_lines: 1, case_sensitive: true });
    expect(result.output).toBe(
      ["notes.md-1-line one", "notes.md:2:TODO in markdown", "notes.md-3-line three", "--", "notes.md-5-line five", "notes.md:6:TODO again", "notes.md-7-line seven"].join("\n"),
    );
  });

  it("searches inside node_modules when path points there", async () => {
    harness = await createToolHarness({ files: CORPUS });
    expect((await harness.call(grep, { pattern: "dependency", path: "node_modules", recursive: true })).output).toBe("node_modules/pkg/index.js:1:// TODO in a dependency");
  });

  it("rejects an invalid regex with VALIDATION_ERROR (rg and fallback)", async () => {
    harness = await createToolHarness({ files: CORPUS });
    for (const overrides of [{}, FALLBACK]) {
      const result = await harness.call(grep, { pattern: "foo(", path: "." }, overrides);
      expect(result.output).toMatch(/^Error: VALIDATION_ERROR — Invalid regular expression "foo\("/);
    }
  });

  it("runs patterns rg cannot parse (look-ahead) on the JavaScript engine", async () => {
    harness = await createToolHarness({ files: CORPUS });
    const result = await harness.call(grep, { pattern: "const (?!TODO)\\w+", path: ".", recursive: true });
    expect(result.output).toBe("src/deep/b.js:1:const beta = 'a.b';\nsrc/deep/b.js:2:const gamma = 'axb';");
  });

  it("refuses to search the secret directly and reports missing paths", async () => {
    harness = await createToolHarness({ files: CORPUS });
    expect((await harness.call(grep, { pattern: "x", path: ".veil/secret" })).output).toMatch(/^Error: PATH_PROTECTED — /);
    expect((await harness.call(grep, { pattern: "x", path: "nope" })).output).toMatch(/^Error: FILE_NOT_FOUND — /);
    expect((await harness.call(grep, { pattern: "nothing-here", path: "." })).output).toBe(
      'No matches found for "nothing-here" in the workspace root. Subdirectories were not searched; set recursive to include them.',
    );
  });

  it("caps the output and says so", async () => {
    const big = Array.from({ length: 3000 }, (_, i) => `match line ${i} ${"z".repeat(40)}`).join("\n");
    harness = await createToolHarness({ files: { "big.txt": big } });
    const result = await harness.call(grep, { pattern: "match", path: "big.txt" });
    expect(result.output.length).toBeLessThan(31_000);
    expect(result.output).toMatch(/\[Output truncated at 30000 chars: showing \d+ of 3000 matching lines in 1 files\./);
  });

  it("shows the first files in path order up to the cap and counts every match of a search that matches everything", async () => {
    const files: Record<string, string> = {};
    for (let f = 0; f < 200; f++) files[`tree/d${f % 9}/f${String(f).padStart(3, "0")}.txt`] = Array.from({ length: 50 }, (_, n) => `row ${n + 1} ${"q".repeat(30)}`).join("\n");
    harness = await createToolHarness({ files });
    const expected = Object.keys(files)
      .sort()
      .flatMap((path) => Array.from({ length: 50 }, (_, n) => `${path}:${n + 1}:row ${n + 1} ${"q".repeat(30)}`));
    for (const services of [{}, FALLBACK]) {
      const result = await harness.call(grep, { pattern: ".", path: "tree", recursive: true }, services);
      const [body, footer] = result.output.split("\n\n");
      const shown = body!.split("\n");
      expect(shown).toEqual(expected.slice(0, shown.length));
      expect(body!.length + 1 + expected[shown.length]!.length + 1).toBeGreaterThan(30_000);
      expect(footer).toBe(`[Output truncated at 30000 chars: showing ${shown.length} of 10000 matching lines in 200 files. Narrow the pattern, path or include glob.]`);
    }
  });

  it("gives the same output with rg and with the pure-Node search", async () => {
    harness = await createToolHarness({ files: CORPUS });
    harness.ws.symlink("src/link.ts", harness.ws.path("top.ts"));
    if (await ripgrepPath(harness.context())) expect((await harness.call(grep, { pattern: "x", path: "." }, RG_ALWAYS)).details?.engine).toBe("rg");
    else console.warn("rg is not installed: comparing the fallback with itself only");
    const queries: Record<string, unknown>[] = [
      { pattern: "todo", path: "." },
      { pattern: "todo", path: ".", recursive: true },
      { pattern: "TODO", path: ".", recursive: true, case_sensitive: true },
      { pattern: "a.b", path: "src", recursive: true, fixed_strings: true },
      { pattern: "^const \\w+ =", path: ".", recursive: true },
      { pattern: "todo", path: ".", recursive: true, include: "*.ts" },
      { pattern: "todo", path: ".", recursive: true, include: "src/*.ts" },
      { pattern: "todo", path: ".", recursive: true, context_lines: 2 },
      { pattern: "crlf$", path: "src/win.txt" },
      { pattern: "binary", path: "src/bin.dat" },
      { pattern: "todo", path: "node_modules", recursive: true },
      { pattern: "", path: "src/a.ts" },
    ];
    for (const query of queries) {
      const viaRg = await harness.call(grep, query, RG_ALWAYS);
      const viaNode = await harness.call(grep, query, FALLBACK);
      const chosen = await harness.call(grep, query);
      expect(viaNode.details?.engine, JSON.stringify(query)).toBe("node");
      expect(viaRg.output, JSON.stringify(query)).toBe(viaNode.output);
      expect(chosen.output, JSON.stringify(query)).toBe(viaNode.output);
    }
  });

  it("searches a small tree for a literal in process, and leaves regexes and bigger trees to rg", async () => {
    const files: Record<string, string> = { ...CORPUS };
    for (let f = 0; f < 260; f++) files[`big/f${String(f).padStart(3, "0")}.txt`] = f % 50 === 0 ? "a needle here\n" : "hay\n";
    harness = await createToolHarness({ files });
    if (!(await ripgrepPath(harness.context()))) return void console.warn("rg is not installed: the choice between engines is not tested");
    const engineOf = async (query: Record<string, unknown>) => (await harness.call(grep, query)).details?.engine;
    expect(await engineOf({ pattern: "todo", path: "src", recursive: true })).toBe("node");
    expect(await engineOf({ pattern: "a.b", path: "src", recursive: true, fixed_strings: true })).toBe("node");
    expect(await engineOf({ pattern: "^const \\w+ =", path: "src", recursive: true })).toBe("rg");
    const big = await harness.call(grep, { pattern: "needle", path: "big", recursive: true });
    expect(big.details?.engine).toBe("rg");
    expect(big.details?.matches).toBe(6);
  });
});

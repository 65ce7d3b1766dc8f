import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { afterEach, describe, expect, it } from "vitest";
import { isVeilError } from "../../../src/errors.js";
import {
  appendMemoryEntry,
  formatEntry,
  lastEntry,
  MemoryLocks,
  parseEntries,
  readMemoryFile,
  resolveMemoryFile,
  writeMemoryFileAtomic,
} from "../../../src/tools/shared/memory-files.js";
import { tmpWorkspace, type TempWorkspace } from "../../helpers/workspace.js";

let ws: TempWorkspace;
afterEach(() => ws?.cleanup());

function validationError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (isVeilError(error) && error.code === "VALIDATION_ERROR") return error.message;
    throw error;
  }
  throw new Error("expected VALIDATION_ERROR");
}

describe("resolveMemoryFile", () => {
  const dir = "/srv/ws/.veil/memory";

  it("resolves global and agent files inside the memory folder", () => {
    expect(resolveMemoryFile(dir, "MEMORY.md")).toBe(`${dir}/MEMORY.md`);
    expect(resolveMemoryFile(dir, "notes.md", "researcher")).toBe(`${dir}/agents/researcher/notes.md`);
    expect(resolveMemoryFile(dir, "project notes 2.md", "agent_1-b")).toBe(`${dir}/agents/agent_1-b/project notes 2.md`);
  });

  const nasty = [
    "",
    ".",
    "..",
    "../secret",
    "..\\secret",
    "a/b.md",
    "a\\b.md",
    "/etc/passwd",
    "C:\\Windows\\win.ini",
    "C:evil",
    "%2e%2e%2fsecret",
    "..%2fsecret",
    "%2Fetc%2Fpasswd",
    "%252e%252e%252f",
    "a%5cb",
    "evil\0.md",
    ".hidden",
    ".env",
    "MEMORY.md.lock",
    "x.tmp-123-abc",
    "name.",
    "name ",
    "a\nb",
    "…/../x",
    "x".repeat(200),
  ];

  it.each(nasty)("refuses the file name %j", (name) => {
    expect(validationError(() => resolveMemoryFile(dir, name))).toContain("memory file name");
  });

  it.each(nasty)("refuses the agent name %j", (name) => {
    expect(validationError(() => resolveMemoryFile(dir, "MEMORY.md", name))).toContain("agent name");
  });

  it("names the decoded form of percent-encoded input", () => {
    expect(validationError(() => resolveMemoryFile(dir, "..%2Fsecret"))).toContain('decodes to "../secret"');
  });

  it("never returns a path outside the folder for any accepted name", () => {
    for (const name of ["a", "a.b", "ünïcode.md", "日本語"]) {
      const path = resolveMemoryFile(dir, name, "bot");
      expect(path.startsWith(`${dir}${sep}agents${sep}bot${sep}`)).toBe(true);
    }
  });
});

describe("entry format", () => {
  it("parses back what it writes, including content that looks like a header", () => {
    const tricky = "line one\n## 2026-01-01T00:00:00.000Z\n\\## 2026-01-02T00:00:00.000Z\nlast";
    const text = formatEntry("2026-03-01T10:00:00.000Z", "first") + formatEntry("2026-03-02T10:00:00.000Z", tricky);
    expect(parseEntries(text)).toEqual([
      { timestamp: "2026-03-01T10:00:00.000Z", content: "first" },
      { timestamp: "2026-03-02T10:00:00.000Z", content: tricky },
    ]);
  });

  it("finds the last entry without parsing the whole file", () => {
    const text = formatEntry("2026-03-01T10:00:00.000Z", "a") + formatEntry("2026-03-02T10:00:00.000Z", "b\n## 2026-01-01T00:00:00.000Z\nc");
    expect(lastEntry(text)).toEqual({ timestamp: "2026-03-02T10:00:00.000Z", content: "b\n## 2026-01-01T00:00:00.000Z\nc" });
    expect(lastEntry("just text")).toEqual({ timestamp: null, content: "just text" });
    expect(lastEntry("")).toBeUndefined();
  });

  it("keeps hand-written text before the first header as an undated entry", () => {
    expect(parseEntries("# My notes\nsome text\n\n## 2026-03-01T10:00:00.000Z\nentry\n")).toEqual([
      { timestamp: null, content: "# My notes\nsome text" },
      { timestamp: "2026-03-01T10:00:00.000Z", content: "entry" },
    ]);
  });
});

describe("reading and writing", () => {
  it("reads null for a missing file and overwrites literally and atomically", async () => {
    ws = tmpWorkspace();
    const path = join(ws.root, "memory", "agents", "a", "MEMORY.md");
    expect(await readMemoryFile(path)).toBeNull();
    await writeMemoryFileAtomic(path, "   ");
    expect(readFileSync(path, "utf8")).toBe("   ");
    await writeMemoryFileAtomic(path, "replaced\n");
    expect(await readMemoryFile(path)).toBe("replaced\n");
    expect(readdirSync(dirname(path))).toEqual(["MEMORY.md"]);
  });

  it("appends after hand-written text without merging it into the entry", async () => {
    ws = tmpWorkspace({ files: { "MEMORY.md": "hand written" } });
    const path = ws.path("MEMORY.md");
    expect(await appendMemoryEntry(path, "new", "2026-03-01T10:00:00.000Z")).toMatchObject({ status: "appended" });
    expect(readFileSync(path, "utf8")).toBe("hand written\n\n## 2026-03-01T10:00:00.000Z\nnew\n\n");
  });

  it("breaks a lock left by a dead process", async () => {
    ws = tmpWorkspace();
    const path = ws.path("MEMORY.md");
    const child = spawn(process.execPath, ["-e", ""]);
    const deadPid = await new Promise<number>((resolve) => child.on("exit", () => resolve(child.pid!)));
    writeFileSync(`${path}.lock`, `${deadPid}@${(await import("node:os")).hostname()}\n`);
    expect(await appendMemoryEntry(path, "after crash", "2026-03-01T10:00:00.000Z")).toMatchObject({ status: "written" });
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it("serialises work per key in process", async () => {
    const locks = new MemoryLocks();
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = locks.run("k", async () => {
      order.push("first start");
      await gate;
      order.push("first end");
    });
    const second = locks.run("k", async () => void order.push("second"));
    const other = locks.run("other", async () => void order.push("other key"));
    await other;
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(["first start", "other key", "first end", "second"]);
  });

  it("loses nothing when several processes append to the same file at once", async () => {
    ws = tmpWorkspace();
    const modules = compileForChild(ws.path("child"));
    const path = ws.path("memory", "MEMORY.md");
    const perWriter = 40;
    const script = (name: string) => `
      import { appendMemoryEntry, MemoryLocks } from ${JSON.stringify(modules)};
      const locks = new MemoryLocks();
      const path = ${JSON.stringify(path)};
      const jobs = [];
      for (let i = 0; i < ${perWriter}; i++) {
        const at = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
        jobs.push(locks.run(path, () => appendMemoryEntry(path, "${name} entry " + i, at)));
      }
      await Promise.all(jobs);
    `;
    const children = ["p1", "p2", "p3"].map(
      (name) =>
        new Promise<void>((resolve, reject) => {
          const child = spawn(process.execPath, ["--input-type=module", "-e", script(name)], { stdio: ["ignore", "ignore", "pipe"] });
          let stderr = "";
          child.stderr.on("data", (d) => (stderr += d));
          child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`child ${name} failed: ${stderr}`))));
        }),
    );
    // as memory_write does: in-process lock around the cross-process one
    const locks = new MemoryLocks();
    const local = Array.from({ length: perWriter }, (_, i) => locks.run(path, () => appendMemoryEntry(path, `parent entry ${i}`, "2026-01-02T00:00:00.000Z")));
    await Promise.all([...children, ...local]);
    const contents = parseEntries(readFileSync(path, "utf8")).map((e) => e.content);
    expect(contents).toHaveLength(4 * perWriter);
    for (const name of ["p1", "p2", "p3", "parent"]) {
      for (let i = 0; i < perWriter; i++) expect(contents.filter((c) => c === `${name} entry ${i}`)).toHaveLength(1);
    }
  });
});

/** Transpiles memory-files.ts and what it imports so a plain `node` child can import them. */
function compileForChild(outDir: string): string {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
  for (const rel of ["src/errors.ts", "src/tools/shared/memory-files.ts", "src/tools/shared/memory-scan.ts", "src/tools/shared/text-view.ts", "src/tools/shared/truncate.ts"]) {
    const source = readFileSync(join(root, rel), "utf8");
    const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
    const target = join(outDir, rel.replace(/\.ts$/, ".js"));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  writeFileSync(join(outDir, "package.json"), '{"type":"module"}');
  return join(outDir, "src/tools/shared/memory-files.js");
}

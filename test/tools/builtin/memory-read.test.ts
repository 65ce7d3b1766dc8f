import { appendFileSync, closeSync, ftruncateSync, mkdirSync, openSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { memoryRead } from "../../../src/tools/builtin/memory-read.js";
import { memoryWrite } from "../../../src/tools/builtin/memory-write.js";
import { formatEntry } from "../../../src/tools/shared/memory-files.js";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";

let harness: ToolHarness;
afterEach(() => harness?.close());

describe("memory_read", () => {
  it("returns an empty string when there is no memory yet", async () => {
    harness = await createToolHarness();
    const result = await harness.call(memoryRead, {});
    expect(result).toMatchObject({ output: "", success: true });
  });

  it("returns the file's contents for each scope", async () => {
    harness = await createToolHarness({
      files: { ".veil/memory/MEMORY.md": "global text\n", ".veil/memory/agents/default/MEMORY.md": "agent text\n" },
    });
    expect((await harness.call(memoryRead, {})).output).toBe("agent text\n");
    expect((await harness.call(memoryRead, { scope: "agent" })).output).toBe("agent text\n");
    expect((await harness.call(memoryRead, { scope: "global" })).output).toBe("global text\n");
  });

  it("reads what memory_write wrote", async () => {
    harness = await createToolHarness();
    await harness.call(memoryWrite, { content: "remember this" });
    expect((await harness.call(memoryRead, {})).output).toMatch(/^## \d{4}-\d{2}-\d{2}T[\d:.]+Z\nremember this\n\n$/);
  });

  it("shows the newest entries of a file too long for one answer and says what was left out", async () => {
    const entries = Array.from({ length: 400 }, (_, i) => formatEntry(new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(), `entry ${i} ${"x".repeat(100)}`));
    harness = await createToolHarness({ files: { ".veil/memory/agents/default/MEMORY.md": entries.join("") } });
    const { output } = await harness.call(memoryRead, {});
    expect(output.length).toBeLessThan(31_000);
    expect(output).toMatch(/^\[Memory is \d+ chars; showing the newest \d+ of 400 entries\. \d+ older entries omitted — use memory_search to find them\.\]/);
    expect(output).toContain("entry 399 ");
    expect(output).not.toContain("entry 0 ");
  });

  it("answers from a memory file longer than any string: totals counted in chunks, entries from its end", async () => {
    harness = await createToolHarness();
    const file = join(harness.ws.root, ".veil", "memory", "agents", "default", "MEMORY.md");
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `# notes\n\n${formatEntry("2026-01-01T00:00:00.000Z", "the first fact")}`);
    const fd = openSync(file, "r+");
    ftruncateSync(fd, 600 * 1024 * 1024);
    closeSync(fd);
    const last = `\n\n${formatEntry("2026-01-02T00:00:00.000Z", "the last fact")}${formatEntry("2026-01-03T00:00:00.000Z", "## 2026-01-04T00:00:00.000Z\nlooks like a header")}`;
    appendFileSync(file, last);
    const { output, details } = await harness.call(memoryRead, {});
    const chars = 600 * 1024 * 1024 + last.length;
    expect(output).toBe(
      `[Memory is ${chars} chars; showing the newest 2 of 4 entries. 2 older entries omitted — use memory_search to find them.]\n\n` +
        `${formatEntry("2026-01-02T00:00:00.000Z", "the last fact")}${formatEntry("2026-01-03T00:00:00.000Z", "## 2026-01-04T00:00:00.000Z\nlooks like a header")}`,
    );
    expect(details).toMatchObject({ chars, truncated: true });
  });

  it("shows the start of a newest entry longer than the end it reads", async () => {
    harness = await createToolHarness();
    const file = join(harness.ws.root, ".veil", "memory", "agents", "default", "MEMORY.md");
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${formatEntry("2026-01-01T00:00:00.000Z", "old")}${formatEntry("2026-01-02T00:00:00.000Z", `huge ${"z".repeat(3 * 1024 * 1024)}`)}`);
    const { output } = await harness.call(memoryRead, {});
    const header = /^\[Memory is (\d+) chars; showing the newest 1 of 2 entries\. 1 older entries omitted — use memory_search to find them\.\]\n\n/.exec(output);
    expect(header).not.toBeNull();
    expect(output.slice(header![0].length)).toBe(`${`## 2026-01-02T00:00:00.000Z\nhuge ${"z".repeat(3 * 1024 * 1024)}`.slice(0, 30_000)}…\n\n`);
  });
});

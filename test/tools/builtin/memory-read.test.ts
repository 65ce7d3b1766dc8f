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
});

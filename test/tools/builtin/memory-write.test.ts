import { appendFileSync, closeSync, existsSync, ftruncateSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/base/clock.js";
import { Resources } from "../../../src/core/resources.js";
import { formatEntry, parseEntries } from "../../../src/tools/shared/memory-files.js";
import { MAX_MEMORY_ENTRY_CHARS, memoryWrite } from "../../../src/tools/builtin/memory-write.js";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";

let harness: ToolHarness;
afterEach(() => harness?.close());

const agentFile = (h: ToolHarness, agent = "default") => join(h.ws.root, ".veil", "memory", "agents", agent, "MEMORY.md");
const globalFile = (h: ToolHarness) => join(h.ws.root, ".veil", "memory", "MEMORY.md");

describe("memory_write", () => {
  it("appends timestamped entries to the agent's file (clock time) and reports written, then appended", async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 4, 50));
    harness = await createToolHarness({ clock });
    const first = await harness.call(memoryWrite, { content: "  The build uses pnpm.  " });
    expect(JSON.parse(first.output)).toEqual({ status: "written", filePath: agentFile(harness), timestamp: "2026-11-30T04:50:00.000Z" });
    await clock.advance(60_000);
    const second = await harness.call(memoryWrite, { content: "Deploys go through staging first." });
    expect(JSON.parse(second.output)).toMatchObject({ status: "appended", filePath: agentFile(harness) });
    expect(readFileSync(agentFile(harness), "utf8")).toBe(
      "## 2026-11-30T04:50:00.000Z\nThe build uses pnpm.\n\n## 2026-11-30T04:51:00.000Z\nDeploys go through staging first.\n\n",
    );
    const audit = await harness.store.listAudit({ sessionId: harness.sessionId, kind: "memory.write" });
    expect(audit.map((a) => a.data.status)).toEqual(["written", "appended"]);
  });

  it("writes the global file with scope global and a named agent's own file", async () => {
    harness = await createToolHarness({ agent: { name: "researcher" } });
    await harness.call(memoryWrite, { content: "shared fact", scope: "global" });
    await harness.call(memoryWrite, { content: "private fact" });
    expect(parseEntries(readFileSync(globalFile(harness), "utf8")).map((e) => e.content)).toEqual(["shared fact"]);
    expect(parseEntries(readFileSync(agentFile(harness, "researcher"), "utf8")).map((e) => e.content)).toEqual(["private fact"]);
  });

  it.each([[null], [""], ["   \n\t  "]])("skips empty content %j without touching the file or the audit log", async (content) => {
    harness = await createToolHarness();
    const result = await harness.call(memoryWrite, { content });
    expect(result.success).toBe(true);
    expect(JSON.parse(result.output)).toEqual({ status: "skipped_empty", filePath: null });
    expect(existsSync(agentFile(harness))).toBe(false);
    expect(await harness.store.listAudit({ kind: "memory.write" })).toEqual([]);
  });

  it("skips only an exact repeat of the last entry (after trimming)", async () => {
    harness = await createToolHarness();
    const status = async (content: string) => JSON.parse((await harness.call(memoryWrite, { content })).output).status as string;
    expect(await status("X is true")).toBe("written");
    const before = readFileSync(agentFile(harness), "utf8");
    expect(JSON.parse((await harness.call(memoryWrite, { content: "\n X is true \n" })).output)).toEqual({
      status: "skipped_duplicate",
      filePath: agentFile(harness),
    });
    expect(readFileSync(agentFile(harness), "utf8")).toBe(before);
    expect(await status("X is true and well-known")).toBe("appended");
    expect(await status("X is true")).toBe("appended");
    expect(await status("x is true")).toBe("appended");
    expect(await status("X is")).toBe("appended");
    expect(parseEntries(readFileSync(agentFile(harness), "utf8")).map((e) => e.content)).toEqual([
      "X is true",
      "X is true and well-known",
      "X is true",
      "x is true",
      "X is",
    ]);
    expect(await harness.store.listAudit({ kind: "memory.write" })).toHaveLength(5);
  });

  it("keeps content that contains a header-like line as one entry, and dedups it", async () => {
    harness = await createToolHarness();
    const tricky = "notes\n## 2026-01-01T00:00:00.000Z\nmore";
    await harness.call(memoryWrite, { content: tricky });
    expect(JSON.parse((await harness.call(memoryWrite, { content: tricky })).output).status).toBe("skipped_duplicate");
    expect(parseEntries(readFileSync(agentFile(harness), "utf8"))).toHaveLength(1);
    expect(parseEntries(readFileSync(agentFile(harness), "utf8"))[0]!.content).toBe(tricky);
  });

  it("loses nothing when two sessions write at once, sharing a runtime or not", async () => {
    harness = await createToolHarness();
    const other = await harness.store.createSession({ id: "sess_other", agent: "default", mode: "chat" });
    const otherSession = new Resources();
    const otherRuntime = new Resources();
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      writes.push(harness.call(memoryWrite, { content: `one ${i}` }));
      writes.push(harness.call(memoryWrite, { content: `two ${i}` }, { sessionId: other.id, session: otherSession }));
      // a second runtime in the same process shares no in-process lock: only the lock file protects
      writes.push(harness.call(memoryWrite, { content: `three ${i}` }, { sessionId: other.id, session: otherSession, runtime: otherRuntime }));
    }
    const results = (await Promise.all(writes)) as { output: string }[];
    expect(results.filter((r) => JSON.parse(r.output).status === "written")).toHaveLength(1);
    const contents = parseEntries(readFileSync(agentFile(harness), "utf8")).map((e) => e.content);
    expect(contents).toHaveLength(120);
    for (const prefix of ["one", "two", "three"]) {
      for (let i = 0; i < 40; i++) expect(contents.filter((c) => c === `${prefix} ${i}`)).toHaveLength(1);
    }
    expect(await harness.store.listAudit({ kind: "memory.write" })).toHaveLength(120);
    await otherSession.dispose();
    await otherRuntime.dispose();
  });

  it("collapses concurrent identical writes to one entry", async () => {
    harness = await createToolHarness();
    const results = await Promise.all(Array.from({ length: 10 }, () => harness.call(memoryWrite, { content: "same fact" })));
    const statuses = results.map((r) => JSON.parse(r.output).status).sort();
    expect(statuses).toEqual(["skipped_duplicate", ...Array(8).fill("skipped_duplicate"), "written"].sort());
    expect(parseEntries(readFileSync(agentFile(harness), "utf8"))).toHaveLength(1);
  });

  it("rejects a bad scope through validation", async () => {
    harness = await createToolHarness();
    const result = await harness.call(memoryWrite, { content: "x", scope: "team" });
    expect(result.success).toBe(false);
    expect(result.output).toMatch(/^Error: VALIDATION_ERROR — .*scope/);
  });

  it("refuses an entry longer than one memory_read answer, writing nothing", async () => {
    harness = await createToolHarness();
    const result = await harness.call(memoryWrite, { content: "x".repeat(MAX_MEMORY_ENTRY_CHARS + 1) });
    expect(result.output).toBe(
      `Error: VALIDATION_ERROR — content is ${MAX_MEMORY_ENTRY_CHARS + 1} chars; one memory entry holds at most ${MAX_MEMORY_ENTRY_CHARS}. Keep the fact short, split it into several entries, or write the detail to a file and remember its path.`,
    );
    expect(existsSync(agentFile(harness))).toBe(false);
    expect(JSON.parse((await harness.call(memoryWrite, { content: "y".repeat(MAX_MEMORY_ENTRY_CHARS) })).output).status).toBe("written");
  });

  it("checks for a repeat by reading only the file's end: a file longer than any string still takes entries", async () => {
    harness = await createToolHarness();
    const file = agentFile(harness);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, formatEntry("2026-01-01T00:00:00.000Z", "the first fact"));
    const fd = openSync(file, "r+");
    ftruncateSync(fd, 600 * 1024 * 1024); // a hole past V8's longest string: reading the file whole fails
    closeSync(fd);
    appendFileSync(file, `\n\n${formatEntry("2026-01-02T00:00:00.000Z", "the last fact")}`);
    expect(JSON.parse((await harness.call(memoryWrite, { content: "the last fact" })).output).status).toBe("skipped_duplicate");
    const size = statSync(file).size;
    expect(JSON.parse((await harness.call(memoryWrite, { content: "the first fact" })).output).status).toBe("appended");
    expect(statSync(file).size).toBe(size + Buffer.byteLength(formatEntry("2026-01-02T00:00:00.000Z", "the first fact")));
  });
});

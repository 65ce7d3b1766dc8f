import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { formatEntry, writeMemoryFileAtomic } from "../../../src/tools/shared/memory-files.js";
import { memorySearch, MemoryIndexCache } from "../../../src/tools/builtin/memory-search.js";
import { memoryWrite } from "../../../src/tools/builtin/memory-write.js";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";

let harness: ToolHarness;
afterEach(() => harness?.close());

const facts = [
  "The staging server is deployed with the deploy.sh script every Friday.",
  "Alice prefers TypeScript over JavaScript for new services.",
  "The production database is Postgres 16, hosted on RDS.",
  "Deployments to production need approval from Bob.",
  "Kubernetes manifests live in the infra/ folder.",
  "Lunch order: pizza on Fridays.",
];

async function seeded(): Promise<ToolHarness> {
  const h = await createToolHarness();
  for (const content of facts) await h.call(memoryWrite, { content });
  return h;
}

function ranked(output: string): string[] {
  return [...output.matchAll(/^\d+\. \[[^\]]+\] score [\d.]+\n(.*)$/gm)].map((m) => m[1]!);
}

describe("memory_search", () => {
  it("ranks entries by relevance and formats dates and scores", async () => {
    harness = await seeded();
    const { output, success } = await harness.call(memorySearch, { query: "deploy staging server" });
    expect(success).toBe(true);
    expect(output).toMatch(/^\d of 6 memory entries match "deploy staging server" \(scope: agent\), best first:/);
    expect(output).toMatch(/^1\. \[\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\] score \d+\.\d{2}$/m);
    const order = ranked(output);
    expect(order[0]).toBe(facts[0]);
    expect(order).toContain(facts[3]);
    expect(order).not.toContain(facts[5]);
  });

  it("folds case and punctuation, stems word endings, and tolerates a typo", async () => {
    harness = await seeded();
    expect(ranked((await harness.call(memorySearch, { query: "POSTGRES!" })).output)[0]).toBe(facts[2]);
    expect(ranked((await harness.call(memorySearch, { query: "deploying" })).output)).toEqual(expect.arrayContaining([facts[0], facts[3]]));
    expect(ranked((await harness.call(memorySearch, { query: "approvals" })).output)[0]).toBe(facts[3]);
    expect(ranked((await harness.call(memorySearch, { query: "kubernets" })).output)[0]).toBe(facts[4]);
  });

  it("returns at most maxResults entries, 5 by default", async () => {
    harness = await seeded();
    const many = await harness.call(memorySearch, { query: "the production staging deploy pizza alice kubernetes postgres" });
    expect(ranked(many.output)).toHaveLength(5);
    const two = await harness.call(memorySearch, { query: "the production staging deploy pizza alice kubernetes postgres", maxResults: 2 });
    expect(ranked(two.output)).toHaveLength(2);
  });

  it("says when nothing matches and when there is no memory", async () => {
    harness = await createToolHarness();
    expect((await harness.call(memorySearch, { query: "anything" })).output).toBe('No memory yet (scope: agent), so nothing matches "anything".');
    await harness.call(memoryWrite, { content: "a fact about cats" });
    expect((await harness.call(memorySearch, { query: "zebra" })).output).toBe('No memory entries match "zebra" (scope: agent, 1 entries searched).');
  });

  it("searches the global scope separately", async () => {
    harness = await seeded();
    await harness.call(memoryWrite, { content: "Global convention: tabs, not spaces.", scope: "global" });
    expect(ranked((await harness.call(memorySearch, { query: "tabs", scope: "global" })).output)).toEqual(["Global convention: tabs, not spaces."]);
    expect((await harness.call(memorySearch, { query: "tabs" })).output).toContain("No memory entries match");
  });

  it("reuses the index while the file is unchanged and rebuilds after a write", async () => {
    harness = await seeded();
    await harness.call(memorySearch, { query: "postgres" });
    const cache = harness.runtimeResources.peek<MemoryIndexCache>("memory.searchIndex")!;
    const path = `${harness.ws.root}/.veil/memory/agents/default/MEMORY.md`;
    const first = await cache.load(path);
    await harness.call(memorySearch, { query: "alice" });
    expect(await cache.load(path)).toBe(first);
    await harness.call(memoryWrite, { content: "Carol owns the billing service." });
    const extended = await cache.load(path);
    expect(extended).not.toBe(first);
    expect(extended!.index).toBe(first!.index); // appended entries join the existing index
    expect(extended!.entries).toHaveLength(facts.length + 1);
    expect(ranked((await harness.call(memorySearch, { query: "billing" })).output)).toEqual(["Carol owns the billing service."]);
  });

  it("rebuilds from scratch when the file is rewritten rather than appended to", async () => {
    harness = await seeded();
    await harness.call(memorySearch, { query: "postgres" });
    const cache = harness.runtimeResources.peek<MemoryIndexCache>("memory.searchIndex")!;
    const path = `${harness.ws.root}/.veil/memory/agents/default/MEMORY.md`;
    const before = await cache.load(path);
    // an HTTP PUT-style overwrite that is longer than before but shares no tail
    await writeMemoryFileAtomic(path, `${formatEntry("2026-02-01T00:00:00.000Z", "Only the new fact about zeppelins remains here.")}${"padding ".repeat(200)}`);
    const after = await cache.load(path);
    expect(after!.index).not.toBe(before!.index);
    expect(ranked((await harness.call(memorySearch, { query: "postgres" })).output)).toEqual([]);
    expect(ranked((await harness.call(memorySearch, { query: "zeppelin" })).output)[0]).toContain("zeppelins");
  });

  it("rebuilds when text is appended by hand without an entry header", async () => {
    harness = await seeded();
    await harness.call(memorySearch, { query: "postgres" });
    const path = `${harness.ws.root}/.veil/memory/agents/default/MEMORY.md`;
    appendFileSync(path, "and also walruses\n");
    const { output } = await harness.call(memorySearch, { query: "walruses" });
    expect(ranked(output)).toEqual([facts[5]]);
    expect(output).toContain(`${facts[5]}\n\nand also walruses`);
  });

  it("keeps indexes of at most its byte cap of files, least recently searched first out; a bigger file is not kept", async () => {
    harness = await createToolHarness();
    const dir = join(harness.ws.root, "mem");
    mkdirSync(dir);
    const file = (name: string, bytes: number) => {
      const path = join(dir, name);
      writeFileSync(path, formatEntry("2026-01-01T00:00:00.000Z", `${name} ${"w ".repeat(bytes / 2)}`));
      return path;
    };
    const [a, b, c] = [file("a", 400), file("b", 400), file("c", 2000)];
    const cache = new MemoryIndexCache(1000);
    await cache.load(a);
    await cache.load(b);
    expect([cache.has(a), cache.has(b)]).toEqual([true, true]);
    await cache.load(a); // a is now the most recent
    await cache.load(file("d", 400));
    expect([cache.has(a), cache.has(b), cache.cachedBytes <= 1000]).toEqual([true, false, true]);
    const big = await cache.load(c);
    expect(big!.entries[0]!.content.startsWith("c ")).toBe(true);
    expect(cache.has(c)).toBe(false);
    expect(cache.cachedBytes).toBeLessThanOrEqual(1000);
  });
});

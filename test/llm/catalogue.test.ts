import { afterEach, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { VeilEvent } from "../../src/base/events.js";
import { CATALOGUE, catalogueEntry, catalogueInfo } from "../../src/llm/catalogue.js";
import { modelInfo } from "../../src/llm/models.js";
import { SUMMARY_SYSTEM_PROMPT } from "../../src/core/compaction/index.js";
import { readEntries, refresh, writeEntries } from "../../scripts/update-model-catalogue.mjs";
import { reply } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const DATA = join(REPO, "src/llm/catalogue-data.ts");
const FIXTURE = join(REPO, "test/fixtures/openrouter/models.json");

describe("the built-in model catalogue", () => {
  it.each(CATALOGUE.map((entry) => [entry.id, entry] as const))("%s is well-formed", (_id, entry) => {
    expect(entry.id).toMatch(/^[a-z0-9-]+\/[a-z0-9][a-z0-9.-]*$/);
    expect(entry.aliases.length).toBeGreaterThan(0);
    for (const alias of entry.aliases) expect(alias).toMatch(/^[a-z0-9][a-z0-9./-]*$/);
    expect(Number.isInteger(entry.context_window) && entry.context_window >= 8192 && entry.context_window <= 10_000_000).toBe(true);
    if (entry.max_output_tokens !== undefined) {
      expect(Number.isInteger(entry.max_output_tokens) && entry.max_output_tokens >= 1024).toBe(true);
      expect(entry.max_output_tokens).toBeLessThanOrEqual(entry.context_window);
    }
    expect(entry.input_modalities[0]).toBe("text");
    expect(new Set(entry.input_modalities).size).toBe(entry.input_modalities.length);
    for (const modality of entry.input_modalities) expect(["text", "image", "audio"]).toContain(modality);
    if (entry.cost) {
      const { input, output, cache_read, cache_write } = entry.cost;
      for (const price of [input, output, cache_read, cache_write]) if (price !== undefined) expect(Number.isFinite(price) && price >= 0).toBe(true);
      expect(input).toBeGreaterThan(0);
      // Output costs more than input, a cache hit less, a cache write no less (for every vendor here).
      expect(output).toBeGreaterThan(input);
      if (cache_read !== undefined) expect(cache_read).toBeLessThan(input);
      if (cache_write !== undefined) expect(cache_write).toBeGreaterThanOrEqual(input);
      expect(Object.keys(entry.cost).every((key) => ["input", "output", "cache_read", "cache_write"].includes(key))).toBe(true);
    }
    expect(entry.source).toMatch(/^https:\/\/[a-z0-9.-]+\.[a-z]{2,}\//);
    expect(Object.keys(entry).every((key) => ["id", "aliases", "context_window", "max_output_tokens", "input_modalities", "cost", "source"].includes(key))).toBe(true);
  });

  it("covers the families people use, and no name means two models", () => {
    const vendors = new Set(CATALOGUE.map((entry) => entry.id.split("/")[0]));
    for (const vendor of ["openai", "anthropic", "google", "deepseek", "qwen", "meta-llama"]) expect(vendors).toContain(vendor);
    const names = CATALOGUE.flatMap((entry) => [entry.id, ...entry.aliases].map((name) => name.toLowerCase()));
    expect(new Set(names).size).toBe(names.length);
    for (const entry of CATALOGUE) for (const name of [entry.id, ...entry.aliases]) expect(catalogueEntry(name)?.id, name).toBe(entry.id);
  });

  it("finds a model by OpenRouter's id or the vendor's name, behind any provider prefix, in any case", () => {
    for (const key of ["openai/gpt-4.1-mini", "gpt-4.1-mini", "openrouter/openai/gpt-4.1-mini", "myproxy/gpt-4.1-mini-2025-04-14", "OpenAI/GPT-4.1-Mini"]) expect(catalogueEntry(key)?.id, key).toBe("openai/gpt-4.1-mini");
    for (const key of ["anthropic/claude-sonnet-4.5", "anthropic/claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "cc/claude-sonnet-4-5"]) expect(catalogueEntry(key)?.id, key).toBe("anthropic/claude-sonnet-4.5");
    expect(catalogueEntry("deepseek-reasoner")?.id).toBe("deepseek/deepseek-r1");
    // A routing variant has the model's window, not its price.
    expect(catalogueEntry("meta-llama/llama-3.3-70b-instruct:free")).toMatchObject({ context_window: 131072 });
    expect(catalogueEntry("openai/gpt-4o:nitro")).toMatchObject({ context_window: 128000, cost: undefined });
    // A local model's window is its server's: not guessed.
    for (const key of ["local/qwen3:8b", "qwen3", "gpt-4", "fake-model", "openai/gpt-4.1-mini-turbo"]) expect(catalogueEntry(key), key).toBeUndefined();
    expect(catalogueInfo("gpt-4o")).toEqual({ context_window: 128000, input_modalities: ["text", "image"], cost: { input: 2.5, output: 10, cache_read: 1.25 } });
    // Max output is reference data: requests carry max_tokens only from models.json.
    expect(catalogueInfo("gpt-4o")).not.toHaveProperty("max_output_tokens");
  });

  it("models.json overrides it field by field; an unknown model gets the defaults", () => {
    expect(modelInfo("openrouter/anthropic/claude-haiku-4.5", {})).toEqual({ context_window: 200000, input_modalities: ["text", "image"], cost: { input: 1, output: 5, cache_read: 0.1, cache_write: 1.25 } });
    const models = { "openrouter/anthropic/claude-haiku-4.5": { context_window: 150000, max_output_tokens: 4096 } };
    expect(modelInfo("openrouter/anthropic/claude-haiku-4.5", models)).toEqual({ context_window: 150000, max_output_tokens: 4096, input_modalities: ["text", "image"], cost: { input: 1, output: 5, cache_read: 0.1, cache_write: 1.25 } });
    expect(modelInfo("local/qwen3:8b", {})).toEqual({ context_window: 128000, input_modalities: ["text"] });
  });
});

describe("scripts/update-model-catalogue.mjs", () => {
  it("reports what differs from OpenRouter's list and rewrites only the block between the markers", async () => {
    const text = readFileSync(DATA, "utf8");
    expect(writeEntries(text, readEntries(text))).toBe(text);
    const { entries, changes, missing } = refresh(readEntries(text), JSON.parse(readFileSync(FIXTURE, "utf8")));
    expect(changes).toEqual([
      'openai/gpt-4o-mini: cost {"input":0.15,"output":0.6,"cache_read":0.075} → {"input":0.2,"output":0.8,"cache_read":0.1}',
      "meta-llama/llama-3.3-70b-instruct: max_output_tokens (none) → 16384",
    ]);
    expect(missing).toHaveLength(CATALOGUE.length - 3);
    // A host-priced model gains no price from one host's listing.
    expect(entries.find((e: { id: string }) => e.id === "meta-llama/llama-3.3-70b-instruct")).not.toHaveProperty("cost");

    const dir = mkdtempSync(join(tmpdir(), "veil-catalogue-"));
    try {
      const copy = join(dir, "catalogue-data.ts");
      copyFileSync(DATA, copy);
      const { stdout } = await promisify(execFile)(process.execPath, [join(REPO, "scripts/update-model-catalogue.mjs"), "--write", "--catalogue", copy, FIXTURE]);
      expect(stdout).toContain("openai/gpt-4o-mini: cost");
      expect(stdout).toContain(`wrote ${copy}`);
      const written = readFileSync(copy, "utf8");
      expect(readEntries(written)).toEqual(entries);
      expect(written.slice(0, written.indexOf("/* catalogue:begin */"))).toBe(text.slice(0, text.indexOf("/* catalogue:begin */")));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a known model with no models.json", () => {
  let h: RuntimeHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  // Nothing recent is kept whole, so a compaction always has the first tool output to prune.
  const settings = { retry: { maxRetries: 0 }, defaultCompaction: { autoThreshold: 0.8, keepRecentTokens: 0 } };
  const bigTool = () => reply().tool("bash", { command: "printf 'x%.0s' $(seq 1 20000)" });
  const chatDone = (sessionId: string) => h!.events.filter((e): e is Extract<VeilEvent, { type: "chat.done" }> => e.sessionId === sessionId && e.type === "chat.done");
  const compactions = (sessionId: string) => h!.events.filter((e) => e.sessionId === sessionId && e.type === "session.compacted");

  it("is priced, has its window in the session row, compacts at its own window, and sends no max_tokens", async () => {
    h = await createRuntimeHarness({ settings, env: { VEIL_MODEL: "openai/gpt-4.1-mini" } });
    const server = await h.serve();
    const big = { prompt_tokens: 120_000, completion_tokens: 1_000, cached_tokens: 20_000 };
    h.llm.enqueue(bigTool().usage(big).stop(), reply().text("done").usage(big).stop());
    const session = (await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json()) as { id: string; context_window: number };
    expect(session.context_window).toBe(1_047_576);
    await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "go" }) });
    const perCall = ((120_000 - 20_000) * 0.4 + 20_000 * 0.1 + 1_000 * 1.6) / 1e6;
    expect(chatDone(session.id)[0]!.cost_usd).toBeCloseTo(2 * perCall, 12);
    // 120k of a 1M window is far from 80 %: no compaction (the 128k default would have compacted).
    expect(compactions(session.id)).toEqual([]);
    for (const request of h.llm.completionRequests) expect(request.body).not.toHaveProperty("max_tokens");
  });

  it("models.json wins field by field: its window compacts earlier, its max output is sent, the catalogue's price stays", async () => {
    h = await createRuntimeHarness({ settings, env: { VEIL_MODEL: "openai/gpt-4.1-mini" }, models: { "openai/gpt-4.1-mini": { context_window: 130_000, max_output_tokens: 2_000 } } });
    const big = { prompt_tokens: 120_000, completion_tokens: 1_000 };
    const turn = [bigTool().usage(big).stop(), reply().text("done").usage(big).stop()];
    // The summarizer may be asked too (the reported 120k stays over the line after pruning).
    h.llm.respond((req) => (req.body.messages[0]?.content === SUMMARY_SYSTEM_PROMPT ? reply().text("## Goal\ngo").usage({ prompt_tokens: 0, completion_tokens: 0 }).stop() : turn.shift()!));
    const session = await h.runtime.sessions.create({ agent: "default" });
    const result = await (await h.runtime.sessions.send(session.id, "go")).result;
    expect(result.error).toBeUndefined();
    expect(result.stopReason).toBe("stop");
    expect(compactions(session.id).length).toBeGreaterThan(0);
    expect(h.llm.completionRequests[0]!.body.max_tokens).toBe(2_000);
    const turnCalls = h.llm.completionRequests.filter((req) => req.body.messages[0]?.content !== SUMMARY_SYSTEM_PROMPT).length;
    expect(turnCalls).toBe(2);
    expect(chatDone(session.id)[0]!.cost_usd).toBeCloseTo((2 * (120_000 * 0.4 + 1_000 * 1.6)) / 1e6, 12);
  });
});

import { describe, expect, it } from "vitest";
import {
  compactionPlan,
  contextTokens,
  effectiveKeepTokens,
  estimateMessageTokens,
  estimateTextTokens,
  MEDIA_PART_TOKENS,
  resolveCompaction,
  shouldCompact,
} from "../../../src/core/compaction/index.js";
import { defaultCompaction } from "../../../src/config/defaults.js";
import type { LlmMessage } from "../../../src/llm/types.js";

describe("token estimate", () => {
  it("counts UTF-8 bytes / 4: ASCII at 4 chars a token, CJK at 0.75 tokens a character", () => {
    expect(estimateTextTokens("")).toBe(0);
    expect(estimateTextTokens(null)).toBe(0);
    expect(estimateTextTokens("abcd".repeat(100))).toBe(100);
    expect(estimateTextTokens("漢".repeat(100))).toBe(75);
  });

  it("adds message overhead, tool calls, thinking and media parts", () => {
    const assistant: LlmMessage = { role: "assistant", content: "abcd", thinking: "efgh", toolCalls: [{ id: "c", name: "bash", arguments: '{"command":"ls"}' }] };
    expect(estimateMessageTokens(assistant)).toBe(4 + 1 + 1 + 4 + 1 + 4);
    const media: LlmMessage = { role: "user", content: [{ type: "text", text: "abcd" }, { type: "image", mediaType: "image/png", data: "AAAA" }] };
    expect(estimateMessageTokens(media)).toBe(4 + 1 + MEDIA_PART_TOKENS);
  });

  it("prefers the provider's usage and estimates only messages added after the measured call", () => {
    const messages: LlmMessage[] = [
      { role: "system", content: "s".repeat(4000) },
      { role: "user", content: "u".repeat(400) },
      { role: "assistant", content: null, toolCalls: [{ id: "c1", name: "read_file", arguments: "{}" }] },
      { role: "tool", toolCallId: "c1", content: "t".repeat(8000) },
    ];
    expect(contextTokens(messages)).toBe(messages.reduce((n, m) => n + estimateMessageTokens(m), 0));
    // The provider measured 2 messages (system + user) at 1234 prompt tokens and answered with 20.
    expect(contextTokens(messages, { promptTokens: 1234, completionTokens: 20, messageCount: 2 })).toBe(1234 + 20 + estimateMessageTokens(messages[3]!));
    expect(contextTokens(messages.slice(0, 1), { promptTokens: 1, completionTokens: 1, messageCount: 2 })).toBe(estimateMessageTokens(messages[0]!));
  });
});

describe("threshold and plan", () => {
  it("compacts at or above autoThreshold × context_window", () => {
    expect(shouldCompact(79_999, 100_000, 0.8)).toBe(false);
    expect(shouldCompact(80_000, 100_000, 0.8)).toBe(true);
    expect(shouldCompact(16_000, 16_000, 1)).toBe(true);
  });

  it("auto: prune first; summarise only when pruning does not get under the headroom target", () => {
    const base = { reason: "auto" as const, contextWindow: 100_000, autoThreshold: 0.8, summarizable: true };
    expect(compactionPlan({ ...base, contextTokens: 85_000, prunableTokens: 40_000 })).toEqual({ prune: true, summarize: false, targetTokens: 64_000 });
    expect(compactionPlan({ ...base, contextTokens: 85_000, prunableTokens: 10_000 })).toEqual({ prune: true, summarize: true, targetTokens: 64_000 });
    expect(compactionPlan({ ...base, contextTokens: 85_000, prunableTokens: 0 })).toEqual({ prune: false, summarize: true, targetTokens: 64_000 });
    expect(compactionPlan({ ...base, contextTokens: 85_000, prunableTokens: 0, summarizable: false })).toMatchObject({ prune: false, summarize: false });
  });

  it("manual and overflow run both stages whatever the size", () => {
    const base = { contextWindow: 100_000, autoThreshold: 0.8, summarizable: true, contextTokens: 1_000, prunableTokens: 500 };
    expect(compactionPlan({ ...base, reason: "manual" })).toMatchObject({ prune: true, summarize: true });
    expect(compactionPlan({ ...base, reason: "overflow" })).toMatchObject({ prune: true, summarize: true });
  });
});

describe("compaction settings", () => {
  const settings = { defaultCompaction: { ...defaultCompaction(), summarizerModel: "settings/compact" }, summarizerModel: "settings/summary" };

  it("agent compaction overrides defaultCompaction key by key; summarizer falls back to summarizerModel, then the session model", () => {
    expect(resolveCompaction(settings, { compaction: { autoThreshold: 0.5 } }, "s/m")).toEqual({ autoThreshold: 0.5, keepRecentTokens: 20_000, summarizerModel: "settings/compact" });
    expect(resolveCompaction(settings, { compaction: { summarizerModel: "agent/small" } }, "s/m").summarizerModel).toBe("agent/small");
    expect(resolveCompaction({ defaultCompaction: defaultCompaction(), summarizerModel: "settings/summary" }, undefined, "s/m").summarizerModel).toBe("settings/summary");
    expect(resolveCompaction({ defaultCompaction: defaultCompaction() }, {}, "s/m").summarizerModel).toBe("s/m");
  });

  it("bounds keepRecentTokens to 40 % of the threshold's share of a small window", () => {
    expect(effectiveKeepTokens({ autoThreshold: 0.8, keepRecentTokens: 20_000 }, 200_000)).toBe(20_000);
    expect(effectiveKeepTokens({ autoThreshold: 0.8, keepRecentTokens: 20_000 }, 16_000)).toBe(5_120);
    expect(effectiveKeepTokens({ autoThreshold: 0.8, keepRecentTokens: 0 }, 16_000)).toBe(0);
  });
});

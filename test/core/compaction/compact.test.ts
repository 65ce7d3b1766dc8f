import { describe, expect, it } from "vitest";
import { checkToolPairing, compactHistory, EMPTY_COMPACTION, SUMMARY_SYSTEM_PROMPT } from "../../../src/core/compaction/index.js";
import { buildModelView } from "../../../src/core/compaction/view.js";
import type { LlmMessage } from "../../../src/llm/types.js";
import { toolHeavyHistory } from "../../helpers/history.js";

const SYSTEM = "system prompt";
const settings = { autoThreshold: 0.8, keepRecentTokens: 2000 };

describe("compactHistory", () => {
  it("manual: both stages whatever the size, with the summarizer's text as the new summary", async () => {
    const h = toolHeavyHistory(60, 500);
    const asked: LlmMessage[][] = [];
    const result = await compactHistory({
      reason: "manual", systemPrompt: SYSTEM, rows: h.rows, state: EMPTY_COMPACTION, contextWindow: 200_000, settings,
      summaryRowId: "sum_1",
      summarize: async (messages) => {
        asked.push(messages);
        return "## Goal\nsmall";
      },
    });
    expect(asked).toHaveLength(1);
    expect(asked[0]![0]!.content).toBe(SUMMARY_SYSTEM_PROMPT);
    expect(result.summary).toEqual({ id: "sum_1", content: "## Goal\nsmall" });
    expect(result.compactedIds.length).toBeGreaterThan(20);
    expect(result.tokensAfter).toBeLessThan(result.tokensBefore);
    expect(checkToolPairing(buildModelView(SYSTEM, h.rows, result.state))).toEqual([]);
  });

  it("auto under the headroom target prunes only; a failing summarizer leaves stage 1 in place", async () => {
    const h = toolHeavyHistory(10, 500);
    const noSummary = await compactHistory({
      reason: "auto", systemPrompt: SYSTEM, rows: h.rows, state: EMPTY_COMPACTION, contextWindow: 200_000, settings, summaryRowId: "x",
      summarize: async () => {
        throw new Error("must not be called");
      },
    });
    expect(noSummary.summary).toBeNull();
    expect(noSummary.summaryError).toBeUndefined();
    expect(noSummary.prunedIds.length).toBeGreaterThan(0);

    const failing = await compactHistory({
      reason: "overflow", systemPrompt: SYSTEM, rows: h.rows, state: EMPTY_COMPACTION, contextWindow: 200_000, settings, summaryRowId: "x",
      overflowMessage: "prompt is too long: 6000 tokens > 4000 maximum",
      summarize: async () => {
        throw new Error("summarizer down");
      },
    });
    expect((failing.summaryError as Error).message).toBe("summarizer down");
    expect(failing.summary).toBeNull();
    expect(failing.tokensBefore).toBe(6000);
    expect(failing.prunedIds.length).toBeGreaterThan(0);
    expect(failing.state.compacted.size).toBe(0);
  });
});

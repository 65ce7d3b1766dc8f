import { describe, expect, it } from "vitest";
import {
  applySummary,
  buildModelView,
  buildSummaryRequest,
  checkToolPairing,
  compactionStateFromRows,
  EMPTY_COMPACTION,
  estimateMessagesTokens,
  pruneToolOutputs,
  pruneToolRows,
  splitForSummary,
  SUMMARY_SECTIONS,
  type CompactionState,
  type HistoryRow,
} from "../../../src/core/compaction/index.js";
import type { LlmMessage } from "../../../src/llm/types.js";
import { HistoryBuilder, textOf, toolHeavyHistory } from "../../helpers/history.js";

const SYSTEM = "You are a careful coding agent.";
const withPruned = (state: CompactionState, ids: string[]): CompactionState => ({ ...state, pruned: new Set([...state.pruned, ...ids]) });

describe("stage 1: pruneToolOutputs", () => {
  it("stubs old tool outputs outside the kept-recent tail, keeping every tool_call answered", () => {
    const h = toolHeavyHistory(20, 1000);
    const before = buildModelView(SYSTEM, h.rows, EMPTY_COMPACTION);
    const pruned = pruneToolRows(h.rows, EMPTY_COMPACTION, 3000);
    const rowsById = new Map(h.rows.map((r) => [r.id, r]));
    expect(pruned.ids.length).toBeGreaterThanOrEqual(17);
    expect(pruned.ids.every((id) => rowsById.get(id)!.role === "tool")).toBe(true);
    // The newest outputs (about 3000 tokens of messages) are kept whole.
    const lastTool = h.rows.filter((r) => r.role === "tool").at(-1)!;
    expect(pruned.ids).not.toContain(lastTool.id);

    const after = buildModelView(SYSTEM, h.rows, withPruned(EMPTY_COMPACTION, pruned.ids));
    expect(after).toHaveLength(before.length);
    expect(checkToolPairing(after)).toEqual([]);
    expect(estimateMessagesTokens(after)).toBe(estimateMessagesTokens(before) - pruned.savedTokens);
    expect(estimateMessagesTokens(after)).toBeLessThan(6000);
    const stub = after.find((m) => m.role === "tool" && typeof m.content === "string" && m.content.startsWith("[Output pruned"))!;
    expect(stub.content).toMatch(/^\[Output pruned to save context: read_file \{"file":"\/src\/file0\.ts"\} returned about \d+ tokens, no longer shown\. Call read_file again if you need it \(offset\/limit read just the lines you need\)\.\]$/);
    // The last user request and the assistant calls are untouched.
    expect(after[1]).toEqual({ role: "user", content: "Refactor the parser module and keep the tests green." });
  });

  it("is idempotent, skips small outputs, and says how to get a bash output back", () => {
    const h = new HistoryBuilder();
    h.user("go");
    h.toolTurn("bash", ["ok"], () => ({ command: "true" }));
    h.toolTurn("bash", [textOf(2000)], () => ({ command: "cat big.log" }));
    h.toolTurn("read_file", [textOf(2000)]);
    const first = pruneToolRows(h.rows, EMPTY_COMPACTION, 2100);
    expect(first.ids).toEqual(["msg_5"]);
    const state = withPruned(EMPTY_COMPACTION, first.ids);
    expect(pruneToolRows(h.rows, state, 2100).ids).toEqual([]);
    const view = buildModelView(SYSTEM, h.rows, state);
    expect(view.find((m) => m.role === "tool" && m.toolCallId === "call_1")!.content).toMatch(/bash \{"command":"cat big\.log"\}.*re-run the command only if it has no side effects/);
    expect(view.find((m) => m.role === "tool" && m.toolCallId === "call_0")!.content).toBe("ok");
  });

  it("works on plain LlmMessage lists, by position", () => {
    const messages: LlmMessage[] = [
      { role: "system", content: SYSTEM },
      { role: "user", content: "go" },
      { role: "assistant", content: null, toolCalls: [{ id: "a", name: "grep", arguments: '{"pattern":"x"}' }, { id: "b", name: "grep", arguments: '{"pattern":"y"}' }] },
      { role: "tool", toolCallId: "a", content: textOf(1500) },
      { role: "tool", toolCallId: "b", content: textOf(1500) },
      { role: "assistant", content: "found it" },
    ];
    expect(pruneToolOutputs(messages, 1600).indexes).toEqual([3]);
    expect(pruneToolOutputs(messages, 100).indexes).toEqual([3, 4]);
    expect(pruneToolOutputs(messages, 100, new Set([3])).indexes).toEqual([4]);
    expect(pruneToolOutputs(messages, 1_000_000).indexes).toEqual([]);
  });

  it("prunes a newest output that alone exceeds the keep budget", () => {
    const h = toolHeavyHistory(1, 30_000);
    expect(pruneToolRows(h.rows, EMPTY_COMPACTION, 5000).ids).toEqual(["msg_3"]);
  });
});

describe("stage 2: summary", () => {
  function summarised(h: HistoryBuilder, keep: number) {
    const split = splitForSummary(h.rows, EMPTY_COMPACTION, keep);
    const request = buildSummaryRequest({ split, state: EMPTY_COMPACTION, rows: h.rows, maxInputTokens: 50_000 });
    const applied = applySummary({ systemPrompt: SYSTEM, rows: h.rows, state: EMPTY_COMPACTION, split, summaryText: "## Goal\nRefactor the parser.", summaryRowId: "msg_sum" });
    return { split, request, applied };
  }

  it("keeps system prompt, summary, the last user request verbatim and the recent messages", () => {
    const h = toolHeavyHistory(30, 800);
    h.user("Also rename parse() to parseDocument().", { source: "http" });
    h.toolTurn("read_file", [textOf(800)]);
    h.toolTurn("edit_file", [textOf(300)], () => ({ file: "/src/parser.ts", old_string: "parse(", new_string: "parseDocument(" }));
    const before = buildModelView(SYSTEM, h.rows, EMPTY_COMPACTION);
    const request: LlmMessage = { role: "user", content: "Also rename parse() to parseDocument()." };
    for (const [keep, requestIsRecent] of [[2000, true], [500, false]] as const) {
      const { split, applied } = summarised(h, keep);
      expect(split.recent[0]!.role).not.toBe("tool");
      expect(split.lastUserRequest!.content).toBe(request.content);
      expect(split.recent.includes(split.lastUserRequest!)).toBe(requestIsRecent);
      expect(split.older.map((r) => r.id)).not.toContain(split.lastUserRequest!.id);
      const view = applied.view;
      expect(view[0]).toEqual({ role: "system", content: SYSTEM });
      expect(view[1]!.content).toMatch(/^<summary>\n[\s\S]*## Goal\nRefactor the parser\.\n<\/summary>$/);
      const recent = before.slice(before.length - split.recent.length);
      expect(view.slice(2)).toEqual(requestIsRecent ? recent : [request, ...recent]);
      expect(checkToolPairing(view)).toEqual([]);
    }
    const { split, applied } = summarised(h, 2000);
    const view = applied.view;
    expect(estimateMessagesTokens(view)).toBeLessThan(estimateMessagesTokens(before) / 5);
    expect(applied.compactedIds).toHaveLength(split.older.length);
    expect(applied.state.summary).toEqual({ id: "msg_sum", content: "## Goal\nRefactor the parser." });
  });

  it("never starts the recent part inside a tool-call group", () => {
    const h = new HistoryBuilder();
    h.user("go");
    h.toolTurn("read_file", [textOf(500), textOf(500), textOf(500)]);
    for (const keep of [0, 400, 600, 1100, 1600, 5000]) {
      const split = splitForSummary(h.rows, EMPTY_COMPACTION, keep);
      if (split.recent.length > 0) expect(split.recent[0]!.role).not.toBe("tool");
      const applied = applySummary({ systemPrompt: SYSTEM, rows: h.rows, state: EMPTY_COMPACTION, split, summaryText: "s", summaryRowId: "x" });
      expect(checkToolPairing(applied.view)).toEqual([]);
    }
  });

  it("asks for the fixed template over a clipped transcript that fits the summarizer's budget", () => {
    const h = toolHeavyHistory(200, 2000);
    const { request, split } = summarised(h, 2000);
    expect(request).toHaveLength(2);
    expect(request[0]!.role).toBe("system");
    for (const section of SUMMARY_SECTIONS) expect(request[0]!.content).toContain(`## ${section}`);
    const user = request[1]!.content as string;
    expect(user).toContain("<transcript>");
    expect(user).toContain("[tool call · read_file]");
    expect(user).toMatch(/\[… \d+ chars left out …\]/);
    expect(user).toMatch(/^<transcript>\n\[… \d+ earlier messages left out …\]/);
    expect(user).toContain("<last-user-request>\nRefactor the parser module and keep the tests green.\n</last-user-request>");
    expect(estimateMessagesTokens(request)).toBeLessThanOrEqual(50_000);
    expect(split.older.length).toBeGreaterThan(390);
  });

  it("merges the previous summary into the next one and hides the rows of both rounds", () => {
    const h = toolHeavyHistory(20, 800);
    const first = summarised(h, 2000).applied;
    h.user("Next: write the changelog.");
    for (let i = 0; i < 10; i++) h.toolTurn("read_file", [textOf(800)]);
    const split = splitForSummary(h.rows, first.state, 2000);
    const request = buildSummaryRequest({ split, state: first.state, rows: h.rows, maxInputTokens: 50_000 });
    expect(request[1]!.content).toMatch(/^<previous-summary>\n## Goal\nRefactor the parser\.\n<\/previous-summary>/);
    const second = applySummary({ systemPrompt: SYSTEM, rows: h.rows, state: first.state, split, summaryText: "## Goal\nParser, then changelog.", summaryRowId: "msg_sum2" });
    expect(second.state.compacted.size).toBe(first.state.compacted.size + second.compactedIds.length);
    expect(second.view[1]!.content).toContain("Parser, then changelog.");
    expect(second.view[1]!.content).not.toContain("Refactor the parser.");
    expect(second.view[2]).toEqual({ role: "user", content: "Next: write the changelog." });
    expect(checkToolPairing(second.view)).toEqual([]);
  });

  it("refuses an empty summary without touching the state", () => {
    const h = toolHeavyHistory(5, 500);
    const split = splitForSummary(h.rows, EMPTY_COMPACTION, 100);
    expect(() => applySummary({ systemPrompt: SYSTEM, rows: h.rows, state: EMPTY_COMPACTION, split, summaryText: "  \n", summaryRowId: "x" })).toThrow(/empty summary/);
  });
});

describe("the view from stored rows", () => {
  it("rebuilds the same view from row flags (summary row, compacted, pruned) as from the state", () => {
    const h = toolHeavyHistory(12, 800);
    h.user("and now the docs");
    for (let i = 0; i < 6; i++) h.toolTurn("read_file", [textOf(800)]);
    const split = splitForSummary(h.rows, EMPTY_COMPACTION, 3000);
    const applied = applySummary({ systemPrompt: SYSTEM, rows: h.rows, state: EMPTY_COMPACTION, split, summaryText: "the summary", summaryRowId: "msg_summary" });
    const pruned = pruneToolRows(h.rows, applied.state, 1000);
    expect(pruned.ids.length).toBeGreaterThan(0);
    const state = withPruned(applied.state, pruned.ids);
    // Persist as a store would: flags on rows, the summary as a row of its own.
    const stored: HistoryRow[] = h.rows.map((row) => ({
      ...row,
      compacted: state.compacted.has(row.id) || null,
      meta: state.pruned.has(row.id) ? { ...row.meta, pruned: true } : row.meta,
    }));
    stored.push({ id: "msg_summary", seq: stored.length + 1, role: "user", content: "the summary", thinking: null, tool_calls: null, tool_call_id: null, meta: null, kind: "summary" });
    const fromRows = compactionStateFromRows(stored);
    expect(fromRows.summary).toEqual({ id: "msg_summary", content: "the summary" });
    expect([...fromRows.compacted].sort()).toEqual([...state.compacted].sort());
    expect([...fromRows.pruned].sort()).toEqual([...state.pruned].sort());
    expect(buildModelView(SYSTEM, stored, fromRows)).toEqual(buildModelView(SYSTEM, h.rows, state));
  });

  it("answers every tool call even when rows are missing or out of place", () => {
    const h = new HistoryBuilder();
    h.user("go");
    const [assistant] = h.toolTurn("read_file", ["a", "b"]);
    const state: CompactionState = { summary: null, compacted: new Set(["msg_4"]), pruned: new Set() };
    const view = buildModelView(SYSTEM, h.rows, state);
    expect(checkToolPairing(view)).toEqual([]);
    expect(view).toContainEqual({ role: "tool", toolCallId: assistant!.tool_calls![1]!.id, content: "[This tool result is no longer available (compacted).]" });
    expect(view.filter((m) => m.role === "tool")).toHaveLength(2);
    const orphan = buildModelView(SYSTEM, h.rows, { summary: null, compacted: new Set([assistant!.id]), pruned: new Set() });
    expect(orphan.map((m) => m.role)).toEqual(["system", "user"]);
  });
});

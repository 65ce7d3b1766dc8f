import {
  compactHistory,
  contextTokens,
  EMPTY_COMPACTION,
  estimateMessagesTokens,
  pruneToolRows,
  shouldCompact,
  type CompactionState,
  type KnownUsage,
} from "../src/core/compaction/index.js";
import { buildModelView } from "../src/core/compaction/view.js";
import { SessionContext } from "../src/core/compaction/session-context.js";
import type { MessageRow } from "../src/store/store.js";
import { toWireMessages } from "../src/llm/openai-compatible/to-wire.js";
import { HistoryBuilder, textOf, toolHeavyHistory } from "../test/helpers/history.js";
import { median, withBaseline, type BenchResult } from "./types.js";

const SYSTEM = "You are a careful coding agent. ".repeat(40);

function time(fn: () => void, rounds: number): number {
  fn(); // warm
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    fn();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

/** Stage 1 over a 500-message history (249 read_file turns of ~1,500 tokens each, ~1.5 MB). */
function stageOne(): BenchResult[] {
  const h = toolHeavyHistory(250, 1500);
  const rows = h.rows.slice(0, 500);
  let pruned = 0;
  const ms = time(() => {
    pruned = pruneToolRows(rows, EMPTY_COMPACTION, 20_000).ids.length;
  }, 30);
  // Baseline: what every model call pays anyway, serialising the same view for the wire.
  const view = buildModelView(SYSTEM, rows, EMPTY_COMPACTION);
  const serialise = time(() => void JSON.stringify(toWireMessages(view)), 30);
  return [
    withBaseline({
      name: "stage 1 prune, 500-message history",
      value: ms,
      unit: "ms",
      baseline: { name: "JSON of the same view for the wire", value: serialise },
      target: "≤ 20 ms",
      note: `${rows.length} rows, ${pruned} tool outputs stubbed`,
    }),
  ];
}

/**
 * The per-step check: provider usage of the last call + an estimate of the tool result that
 * arrived since (a new 6 KB message each step, so nothing is cached), against the threshold.
 */
function thresholdCheck(): BenchResult[] {
  const h = toolHeavyHistory(250, 1500);
  const view = buildModelView(SYSTEM, h.rows.slice(0, 500), EMPTY_COMPACTION);
  const known: KnownUsage = { promptTokens: 150_000, completionTokens: 50, messageCount: view.length - 2 };
  const n = 20_000;
  const output = textOf(1500);
  const fresh = Array.from({ length: n }, (_, i) => ({ role: "tool" as const, toolCallId: `call_new_${i}`, content: output }));
  let hits = 0;
  const total = time(() => {
    for (let i = 0; i < n; i++) {
      view[view.length - 1] = fresh[i]!;
      if (shouldCompact(contextTokens(view, known), 200_000, 0.8)) hits++;
    }
  }, 5);
  return [{ name: "threshold check per step", value: (total / n) * 1000, unit: "µs", target: "≤ 50 µs (0.05 ms)", note: `usage + a new 6 KB tool result, 500-message view (${hits > 0 ? "over" : "under"} threshold)` }];
}

/**
 * Prompt size of a 200-call session of 1,500-token tool outputs on a 16k window, with and
 * without compaction (estimated tokens of each model call's prompt; the summarizer answers
 * a fixed 120-token summary instantly).
 */
async function sessionTable(): Promise<BenchResult[]> {
  const window = 16_000;
  const settings = { autoThreshold: 0.8, keepRecentTokens: 20_000 };
  const summary = `## Goal\n${textOf(20)}## Decisions and why\n${textOf(20)}## Files read and changed\n${textOf(40)}## Current state\n${textOf(20)}## Open questions\nNone\n## Next steps\n1. Continue.`;
  const plain = new HistoryBuilder();
  const compacted = new HistoryBuilder();
  plain.user("Read every file and report.");
  compacted.user("Read every file and report.");
  let state: CompactionState = EMPTY_COMPACTION;
  let rounds = 0;
  let compactMs = 0;
  const withSizes: number[] = [];
  const withoutSizes: number[] = [];
  for (let call = 1; call <= 200; call++) {
    withoutSizes.push(estimateMessagesTokens(buildModelView(SYSTEM, plain.rows, EMPTY_COMPACTION)));
    withSizes.push(estimateMessagesTokens(buildModelView(SYSTEM, compacted.rows, state)));
    const output = textOf(1500, `file${call}`);
    plain.toolTurn("read_file", [output]);
    compacted.toolTurn("read_file", [output]);
    const size = contextTokens(buildModelView(SYSTEM, compacted.rows, state));
    if (shouldCompact(size, window, settings.autoThreshold)) {
      const start = performance.now();
      const done = await compactHistory({
        reason: "auto", systemPrompt: SYSTEM, rows: compacted.rows, state, contextWindow: window, settings, contextTokens: size,
        summaryRowId: `sum_${rounds}`, summarize: async () => summary,
      });
      compactMs += performance.now() - start;
      state = done.state;
      rounds++;
    }
  }
  const lines = ["    call | prompt tokens, no compaction | with compaction (16k window)"];
  for (const call of [1, 10, 25, 50, 75, 100, 125, 150, 175, 200]) {
    lines.push(`    ${String(call).padStart(4)} | ${String(withoutSizes[call - 1]).padStart(28)} | ${String(withSizes[call - 1]).padStart(8)}`);
  }
  console.log(lines.join("\n"));
  return [
    { name: "200-call session: largest prompt with compaction", value: Math.max(...withSizes), unit: "tokens", target: `< ${window}`, note: `${rounds} compactions, ${(compactMs / Math.max(1, rounds)).toFixed(2)} ms each` },
    { name: "200-call session: largest prompt without compaction", value: Math.max(...withoutSizes), unit: "tokens", note: `over the window from call ${withoutSizes.findIndex((s) => s >= window) + 1}` },
  ];
}

/**
 * What the wiring adds to every model call: SessionContext.modelContext() rebuilds the view
 * from the session's 500 rows and checks the threshold (under it here, so no store or
 * model is touched). Baseline: serialising the same view for the wire, which every call pays.
 */
async function contextPerStep(): Promise<BenchResult[]> {
  const rows = toolHeavyHistory(250, 1500).rows.slice(0, 500) as unknown as MessageRow[];
  const untouched = new Proxy({}, { get: () => { throw new Error("not used under the threshold"); } });
  const context = new SessionContext({ sessionId: "s", ids: untouched as never, log: untouched as never, llm: untouched as never });
  context.begin({ systemPrompt: SYSTEM, modelKey: "m", contextWindow: 1_000_000, settings: { autoThreshold: 0.8, keepRecentTokens: 20_000, summarizerModel: "m" } }, rows, 0, untouched as never);
  await context.modelContext();
  context.noteUsage({ prompt_tokens: 400_000, completion_tokens: 50, total_tokens: 400_050, cached_tokens: 0, cache_creation_tokens: 0, reasoning_tokens: 0 });
  const samples: number[] = [];
  let view = await context.modelContext();
  for (let i = 0; i < 50; i++) {
    const start = performance.now();
    view = await context.modelContext();
    samples.push(performance.now() - start);
  }
  const serialise = time(() => void JSON.stringify(toWireMessages(view)), 30);
  return [
    withBaseline({
      name: "model context per call (view from 500 rows + threshold check)",
      value: median(samples),
      unit: "ms",
      baseline: { name: "JSON of the same view for the wire", value: serialise },
      note: `${view.length} messages`,
    }),
  ];
}

export async function run(): Promise<BenchResult[]> {
  return [...stageOne(), ...thresholdCheck(), ...(await contextPerStep()), ...(await sessionTable())];
}

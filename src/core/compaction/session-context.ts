import type { VeilEventBody } from "../../base/events.js";
import type { IdGenerator } from "../../base/ids.js";
import type { Logger } from "../../base/log.js";
import type { TokenUsage } from "../../base/usage.js";
import { errorMessage, isVeilError, VeilError } from "../../errors.js";
import type { LlmClient, LlmError, LlmMessage } from "../../llm/types.js";
import type { MessageRow, Store } from "../../store/store.js";
import type { Attachment } from "../../tools/types.js";
import { compactHistory, type CompactResult } from "./compact.js";
import { contextOverflowError, isOverflowError } from "./overflow.js";
import { shouldCompact, type CompactionReason } from "./plan.js";
import type { ResolvedCompaction } from "./settings.js";
import { contextTokens, estimateMessagesTokens, type KnownUsage } from "./tokens.js";
import { buildModelView, compactionStateFromRows, EMPTY_COMPACTION, type CompactionState, type HistoryRow } from "./view.js";

/** What one turn fixes for compaction: the model, its window, the settings, the prompt. */
export interface ContextTurn {
  systemPrompt: string;
  /** See RunRequest.sessionBrief. */
  sessionBrief?: string;
  modelKey: string;
  contextWindow: number;
  settings: ResolvedCompaction;
  /** The summarizer model's window. default: contextWindow */
  summarizerWindow?: number;
  signal?: AbortSignal;
}

/** What a compaction did, as POST /sessions/:id/compact answers and session.compacted says. */
export interface CompactionOutcome {
  reason: CompactionReason;
  tokensBefore: number;
  tokensAfter: number;
  summaryMessageId: string | null;
  /** False when nothing was old enough to prune or summarise. */
  changed: boolean;
}

export interface SessionContextDeps {
  sessionId: string;
  ids: IdGenerator;
  log: Logger;
  llm: LlmClient;
  /** After a compaction was stored, through the same writer's store (e.g. nested instructions are given again). */
  afterCompaction?(store: ContextWriter["store"]): Promise<void>;
}

/**
 * Where a compaction stores what it did: the running turn's recorder (its fenced store, its
 * events, the turn's cost), or a writer of the session outside any run (an idle session's
 * manual compaction).
 */
export interface ContextWriter {
  store: Pick<Store, "updateMessageMeta" | "appendMessage" | "setCompacted" | "clearReadMarkers" | "updateSession" | "setSessionMeta">;
  publish(body: Extract<VeilEventBody, { type: "session.compacted" }>): Promise<unknown>;
  /** A summarizer call's usage, added to the session's (and the running turn's) spend; `contextSize` is the session's as it stands. */
  spend(usage: TokenUsage, modelKey: string, contextSize: number): Promise<void>;
  /** After a compaction was stored (e.g. drop an engine's own conversation state). */
  compacted(): Promise<void>;
}

/**
 * After an auto compaction that changed nothing, the next auto attempt waits until the
 * context has grown by this share of the window (otherwise every step would try again).
 */
const RETRY_GROWTH = 0.05;

/**
 * The model's context of one session, kept beside the runs: the stored rows
 * (mirrored as the recorder writes them), the compaction state, and the provider's last
 * count. It answers the engine's modelContext() / modelCallFailed() hooks, compacting
 * when the threshold is reached, on an overflow and on request, and stores what a
 * compaction did (flags, the summary row, fresh read markers) before the next view is built.
 * Compactions of one session never overlap.
 */
export class SessionContext {
  private rows: HistoryRow[] = [];
  private state: CompactionState = EMPTY_COMPACTION;
  /** The provider's count of the last call over the view it was sent (null: estimate). */
  private known: KnownUsage | null = null;
  /** The session's stored context_size at the start of a run (a count from before a restart). */
  private storedSize = 0;
  private lastView: LlmMessage[] = [];
  private turn: ContextTurn | null = null;
  private writer: ContextWriter | null = null;
  private manual: { resolve(outcome: CompactionOutcome): void; reject(error: unknown): void }[] = [];
  private queue: Promise<unknown> = Promise.resolve();
  private autoFloor = 0;

  constructor(private readonly deps: SessionContextDeps) {}

  /** A run (or an idle compaction) starts: the rows as stored now, the turn's model and settings, and where its compactions write. */
  begin(turn: ContextTurn, rows: readonly MessageRow[], storedContextSize: number, writer: ContextWriter): void {
    this.turn = turn;
    this.writer = writer;
    this.rows = [...rows];
    this.state = compactionStateFromRows(rows);
    this.storedSize = storedContextSize;
  }

  end(): void {
    this.turn = null;
    this.writer = null;
    this.lastView = [];
  }

  /** A row the run stored (assistant step, tool result, delivered message); attachments live only in this process. */
  addRow(row: MessageRow, attachments?: readonly Attachment[]): void {
    this.rows.push(attachments && attachments.length > 0 ? { ...row, attachments } : row);
  }

  /** The provider's usage of the call made over the last view. */
  noteUsage(usage: TokenUsage): void {
    // An engine that never asked for the view (it keeps its own conversation): only the total is known.
    if (this.lastView.length === 0) {
      this.known = null;
      this.storedSize = usage.prompt_tokens + usage.completion_tokens;
      return;
    }
    this.known = { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, messageCount: this.lastView.length };
  }

  /** RunIO.modelContext: a waiting manual request or a reached threshold compacts first. */
  async modelContext(): Promise<LlmMessage[]> {
    const turn = this.requireTurn();
    await this.serial(async () => {
      if (this.manual.length > 0) return this.runManual();
      const size = this.size(this.view());
      if (size >= this.autoFloor && shouldCompact(size, turn.contextWindow, turn.settings.autoThreshold)) await this.compact("auto", size);
    });
    this.lastView = this.view();
    return this.lastView;
  }

  /** RunIO.modelCallFailed: an overflow compacts and retries once, then fails with CONTEXT_OVERFLOW. */
  async modelCallFailed(error: LlmError, retried: boolean): Promise<{ retry: LlmMessage[] } | { fail: { code: string; message: string } } | null> {
    if (!isOverflowError(error)) return null;
    const turn = this.requireTurn();
    if (retried) {
      const failure = contextOverflowError({ modelKey: turn.modelKey, contextWindow: turn.contextWindow, promptTokens: contextTokens(this.lastView), providerMessage: error.message });
      return { fail: { code: failure.code, message: failure.message } };
    }
    await this.serial(() => this.compact("overflow", undefined, error.message));
    this.lastView = this.view();
    return { retry: this.lastView };
  }

  /** A manual compaction of a running session: done at its next boundary (or when the run ends). */
  requestCompaction(): Promise<CompactionOutcome> {
    return new Promise((resolve, reject) => this.manual.push({ resolve, reject }));
  }

  /** The run ended: a manual request that saw no boundary is done now, while the turn is still known. */
  async settle(): Promise<void> {
    if (this.manual.length > 0) await this.serial(() => this.runManual());
  }

  /** A manual compaction of a session with no run: now. */
  async compactNow(turn: ContextTurn, rows: readonly MessageRow[], storedContextSize: number, writer: ContextWriter): Promise<CompactionOutcome> {
    return this.serial(async () => {
      this.begin(turn, rows, storedContextSize, writer);
      try {
        return await this.compact("manual");
      } finally {
        this.end();
      }
    });
  }

  /** Resolves when no compaction is under way (a run waits for this before reading the rows). */
  async quiet(): Promise<void> {
    await this.queue.catch(() => undefined);
  }

  /** Waiting manual requests fail (the session closes, the run could not start). */
  abandon(error: unknown): void {
    for (const waiter of this.manual.splice(0)) waiter.reject(error);
  }

  private serial<T>(task: () => Promise<T>): Promise<T> {
    const next = this.queue.catch(() => undefined).then(task);
    this.queue = next;
    return next;
  }

  private async runManual(): Promise<void> {
    const waiters = this.manual.splice(0);
    try {
      const outcome = await this.compact("manual");
      for (const waiter of waiters) waiter.resolve(outcome);
    } catch (error) {
      for (const waiter of waiters) waiter.reject(error);
    }
  }

  private requireTurn(): ContextTurn {
    if (!this.turn) throw new VeilError("INTERNAL_ERROR", "the session's context was used outside a run");
    return this.turn;
  }

  private requireWriter(): ContextWriter {
    if (!this.writer) throw new VeilError("INTERNAL_ERROR", "the session's context was used outside a run");
    return this.writer;
  }

  private view(): LlmMessage[] {
    const turn = this.requireTurn();
    return buildModelView(turn.systemPrompt, this.rows, this.state, turn.sessionBrief);
  }

  /** The next prompt's size: the provider's count plus estimates of what came since; an estimate otherwise. */
  private size(view: LlmMessage[]): number {
    if (this.known) return contextTokens(view, this.known);
    return Math.max(estimateMessagesTokens(view), this.storedSize);
  }

  private async compact(reason: CompactionReason, contextSize?: number, overflowMessage?: string): Promise<CompactionOutcome> {
    const turn = this.requireTurn();
    const size = contextSize ?? (reason === "overflow" ? undefined : this.size(this.view()));
    const result = await compactHistory({
      reason,
      systemPrompt: turn.systemPrompt,
      ...(turn.sessionBrief ? { sessionBrief: turn.sessionBrief } : {}),
      rows: this.rows,
      state: this.state,
      contextWindow: turn.contextWindow,
      settings: turn.settings,
      contextTokens: size,
      summarize: (messages) => this.summarize(messages),
      summaryRowId: this.deps.ids.next("msg"),
      summarizerWindow: turn.summarizerWindow,
      overflowMessage,
    });
    // The session moved to another node while the summarizer ran (its spend was refused): nothing more is written here.
    if (isVeilError(result.summaryError) && result.summaryError.code === "LEASE_LOST") throw result.summaryError;
    if (result.summaryError !== undefined) {
      this.deps.log.warn("compaction: the summarizer failed; only old tool outputs were pruned", { sessionId: this.deps.sessionId, error: errorMessage(result.summaryError) });
    }
    const changed = result.prunedIds.length > 0 || result.summary !== null;
    if (changed) await this.persist(result);
    this.autoFloor = !changed && reason === "auto" ? (size ?? 0) + Math.ceil(turn.contextWindow * RETRY_GROWTH) : 0;
    const outcome: CompactionOutcome = { reason, tokensBefore: result.tokensBefore, tokensAfter: result.tokensAfter, summaryMessageId: result.summary?.id ?? null, changed };
    if (changed || reason === "manual") {
      const { changed: _changed, ...body } = outcome;
      await this.requireWriter().publish({ type: "session.compacted", ...body });
    }
    return outcome;
  }

  /**
   * Stores a compaction in an order where a crash at any point leaves a valid history: stubs
   * first, then the summary row, and only then the flags that hide what it replaces.
   */
  private async persist(result: CompactResult): Promise<void> {
    const { sessionId } = this.deps;
    const writer = this.requireWriter();
    const { store } = writer;
    const pruned = new Set(result.prunedIds);
    const compacted = new Set(result.compactedIds);
    for (const row of this.rows) {
      if (pruned.has(row.id)) await store.updateMessageMeta(sessionId, row.id, { ...(row.meta ?? {}), pruned: true });
    }
    let summaryRow: MessageRow | null = null;
    if (result.summary) {
      summaryRow = await store.appendMessage({
        id: result.summary.id,
        session_id: sessionId,
        role: "system",
        content: result.summary.content,
        kind: "summary",
        meta: { source: "compaction", replaces: result.compactedIds.length },
      });
    }
    if (compacted.size > 0) await store.setCompacted(sessionId, result.compactedIds);
    await store.clearReadMarkers(sessionId);
    await store.updateSession(sessionId, { context_size: result.tokensAfter });
    this.rows = this.rows.map((row) =>
      pruned.has(row.id) ? { ...row, meta: { ...(row.meta ?? {}), pruned: true } } : compacted.has(row.id) ? { ...row, compacted: true } : row,
    );
    if (summaryRow) this.rows.push(summaryRow);
    this.state = result.state;
    this.known = null;
    this.storedSize = result.tokensAfter;
    await writer.compacted();
    await this.deps.afterCompaction?.(writer.store);
  }

  /** The summarizer model, no tools; its spend counts as the session's. */
  private async summarize(messages: LlmMessage[]): Promise<string> {
    const turn = this.requireTurn();
    const modelKey = turn.settings.summarizerModel;
    const current = this.known ? this.known.promptTokens + this.known.completionTokens : this.storedSize;
    for await (const event of this.deps.llm.stream({ modelKey, messages, signal: turn.signal })) {
      if (event.type === "error") {
        await this.requireWriter().spend(event.usage, event.model, current);
        throw new VeilError("LLM_ERROR", `the summarizer model ${modelKey} failed: ${event.error.message}`);
      }
      if (event.type === "done") {
        await this.requireWriter().spend(event.usage, event.model, current);
        return event.message.content ?? "";
      }
    }
    throw new VeilError("LLM_ERROR", `the summarizer model ${modelKey} ended without an answer`);
  }
}

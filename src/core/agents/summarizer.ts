import { VeilError } from "../../errors.js";
import type { LlmClient } from "../../llm/types.js";
import type { MessageRow, TokenUsage } from "../../store/store.js";

const WINDOW_MS = 60_000;
/** The transcript the summarizer reads: the newest rows, each and all capped. */
const MAX_ROWS = 60;
const MAX_ROW_CHARS = 2_000;
const MAX_TRANSCRIPT_CHARS = 24_000;

export const SUMMARIZER_SYSTEM_PROMPT =
  "You summarise the progress of an AI sub-agent for the orchestrator that started it. " +
  "Read the transcript and answer in 2-3 sentences of plain prose: what it was asked, what it has done so far, and where it stands now (working, blocked, finished). No lists, no preamble.";

/** A sliding one-minute window over get-summary calls (settings.summarizerMaxCallsPerMinute). */
export class SummaryRateLimiter {
  private readonly calls: number[] = [];

  /** Takes a slot, or tells how long until one frees up. Unlimited when `max` is unset. */
  take(now: number, max: number | undefined): { ok: true } | { ok: false; retryAfterMs: number } {
    if (!max || max <= 0) return { ok: true };
    while (this.calls.length > 0 && this.calls[0]! <= now - WINDOW_MS) this.calls.shift();
    if (this.calls.length >= max) return { ok: false, retryAfterMs: Math.max(1, this.calls[0]! + WINDOW_MS - now) };
    this.calls.push(now);
    return { ok: true };
  }
}

/** One paid model call that turns a session's recent history into a short summary. */
export async function summarizeTranscript(options: {
  llm: LlmClient;
  modelKey: string;
  rows: readonly MessageRow[];
  objective: string | null;
  signal: AbortSignal;
}): Promise<{ text: string; usage: TokenUsage }> {
  const transcript = renderTranscript(options.rows);
  const user = [options.objective ? `Objective of the sub-agent:\n${options.objective}` : "", `Transcript (oldest first):\n${transcript}`]
    .filter(Boolean)
    .join("\n\n");
  const stream = options.llm.stream({
    modelKey: options.modelKey,
    messages: [
      { role: "system", content: SUMMARIZER_SYSTEM_PROMPT },
      { role: "user", content: user },
    ],
    signal: options.signal,
  });
  for await (const event of stream) {
    if (event.type === "done") return { text: event.message.content?.trim() || "(the summarizer returned no text)", usage: event.usage };
    if (event.type === "error") {
      throwIfStopped(options.signal);
      throw new VeilError("LLM_ERROR", `get-summary failed on model "${options.modelKey}": ${event.error.message}`);
    }
  }
  throwIfStopped(options.signal);
  throw new VeilError("LLM_ERROR", `get-summary: the model stream of "${options.modelKey}" ended without a result`);
}

/**
 * A call cut short by its run's stop (a cancel, or a lost lease) reports why the run stopped,
 * not a model failure: the caller must see LEASE_LOST or CANCELLED, which it acts on differently.
 */
function throwIfStopped(signal: AbortSignal): void {
  if (!signal.aborted) return;
  const reason: unknown = signal.reason;
  if (reason instanceof VeilError) throw reason;
  throw new VeilError("CANCELLED", "get-summary was cancelled before the model answered");
}

function renderTranscript(rows: readonly MessageRow[]): string {
  const lines: string[] = [];
  for (const row of rows.slice(-MAX_ROWS)) {
    const parts: string[] = [];
    if (row.content) parts.push(clip(row.content));
    for (const call of row.tool_calls ?? []) parts.push(`calls ${call.name}(${clip(call.arguments, 300)})`);
    if (parts.length === 0) continue;
    lines.push(`[${row.role}] ${parts.join(" | ")}`);
  }
  let text = lines.join("\n");
  if (text.length > MAX_TRANSCRIPT_CHARS) text = `…${text.slice(-MAX_TRANSCRIPT_CHARS)}`;
  return text || "(no messages yet)";
}

function clip(text: string, max = MAX_ROW_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

import type { TokenUsage } from "../../base/usage.js";
import type { RunEvent, RunResult } from "../../engines/types.js";

/**
 * What observability (metrics, traces) sees of the runs. Nothing here loads a telemetry
 * package: the modules that do are imported only once telemetry is configured (load.ts).
 */

/** Where a turn's trace hangs: a caller's W3C traceparent, or the tool call that sent a sub-agent its message. */
export type TurnParent = { traceparent: string } | { sessionId: string; toolCallId?: string };

export interface TurnStart {
  sessionId: string;
  parent: TurnParent | null;
  /** USD of one model call (null when the model has no price). */
  costOf(usage: TokenUsage, model?: string): number | null;
}

/** What the turn runs, once its session and model are known. */
export interface TurnPlan {
  agent: string;
  modelKey: string;
  engine: string;
}

/** One turn, as observability follows it. Calls never throw and never wait. */
export interface TurnTelemetry {
  prepared(plan: TurnPlan): void;
  /** Every engine event of the turn, in order, as the recorder takes it. */
  event(event: RunEvent): void;
  ended(result: RunResult): void;
}

export interface Telemetry {
  turnStarted(start: TurnStart): TurnTelemetry;
  /** A model call (of a turn, a compaction, the completions proxy) failed with this code. */
  modelCallFailed?(code: string): void;
  /**
   * The W3C traceparent of the span a turn with this parent would hang under (null: none
   * known here), stored with a queued message: a run that starts from the stored row after a
   * restart, or on another node, no longer has that span in memory.
   */
  traceparentOf?(parent: TurnParent): string | null;
  /** Exports what is still buffered, then stops. */
  close(): Promise<void>;
}

/** Several telemetries as one (null when there are none). */
export function combineTelemetry(parts: readonly Telemetry[]): Telemetry | null {
  if (parts.length === 0) return null;
  if (parts.length === 1) return parts[0]!;
  return {
    turnStarted(start) {
      const turns = parts.map((part) => part.turnStarted(start));
      return {
        prepared: (plan) => turns.forEach((turn) => turn.prepared(plan)),
        event: (event) => turns.forEach((turn) => turn.event(event)),
        ended: (result) => turns.forEach((turn) => turn.ended(result)),
      };
    },
    modelCallFailed: (code) => parts.forEach((part) => part.modelCallFailed?.(code)),
    traceparentOf: (parent) => parts.reduce<string | null>((found, part) => found ?? part.traceparentOf?.(parent) ?? null, null),
    close: async () => void (await Promise.all(parts.map((part) => part.close()))),
  };
}

import type { RunResult } from "../engines/types.js";
import type { ControlAction, ControlArgs } from "../store/cluster.js";
import type { Store } from "../store/store.js";
import { ZERO_USAGE } from "../store/store.js";
import type { LiveSession } from "./live-session.js";

/**
 * What one run writes its session through: a store, and a signal that aborts the run when
 * the session can no longer be written from here. A run (and an idle session's compaction)
 * opens one at its start and closes it at its end.
 */
export interface RunFence {
  readonly store: Store;
  readonly signal: AbortSignal;
  /** True once the session was lost to another writer: the run writes nothing more and stops. */
  readonly lost: boolean;
  /** The run ended: later writes of the session are no longer this run's. */
  close(): void;
}

/**
 * Where a session's runs happen and what they write through, chosen once when the runtime
 * starts. On one process every session runs here and writes the plain store
 * (`singleNodePlacement`); several nodes on one database run each session on the holder of
 * its lease and fence its writes with that lease (core/cluster/node.ts).
 */
export interface SessionPlacement {
  /** Takes the session for this process (recovery at start, queued messages); false when another node holds it. */
  claim(sessionId: string): Promise<boolean>;
  /** True while runs of the session may start here (the next queued message after a run). */
  holds(sessionId: string): boolean;
  /**
   * The fence of a run (or an idle session's compaction) starting now; undefined when another
   * node holds the session, whose answers the messages waiting in `live` then get.
   */
  openRun(sessionId: string, live: LiveSession): Promise<RunFence | undefined>;
  /** A message was stored for an idle session: `start` runs it here, or its waiter gets the answer of the run that consumes it elsewhere. */
  startOrAwait(sessionId: string, live: LiveSession, messageId: string, start: () => void): void;
  /** A run here consumed `messageId`: nothing waits for its answer elsewhere any more. */
  consumedHere(sessionId: string, messageId: string): void;
  /** The idle session's live state here is gone: any node may take it at its next message. */
  release(sessionId: string): Promise<void>;
  /** Runs the control action `here`, or where the session runs (with `args`), and returns that answer. */
  control<T>(sessionId: string, action: ControlAction, here: () => Promise<T>, args?: ControlArgs): Promise<T>;
}

/** The result of a run that could not start here because another node holds the session. */
export function notHeldResult(id: string): RunResult {
  return { content: null, finishReason: "error", stopReason: "error", messageId: null, usage: { ...ZERO_USAGE }, iterations: 0, error: { code: "LEASE_LOST", message: `session "${id}" is held by another node` } };
}

/** One process: every session runs here, every write goes to the store as it is, and nothing is ever lost to another writer. */
export function singleNodePlacement(store: Store): SessionPlacement {
  return {
    claim: async () => true,
    holds: () => true,
    // A signal of its own per run (never aborted), so no run's listeners outlive it.
    openRun: async () => ({ store, signal: new AbortController().signal, lost: false, close: () => undefined }),
    startOrAwait: (_sessionId, _live, _messageId, start) => start(),
    // No other process waits for a message on one node.
    consumedHere: () => undefined,
    release: async () => undefined,
    control: (_sessionId, _action, here) => here(),
  };
}

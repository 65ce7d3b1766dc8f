import type { Logger } from "../../base/log.js";
import type { RunResult } from "../../engines/types.js";
import type { ControlAction } from "../../store/cluster.js";
import { ZERO_USAGE } from "../../store/store.js";
import type { LiveSession } from "../live-session.js";
import type { RunFence } from "./fencing.js";

/**
 * Several nodes on one database (core/cluster): only the node holding a session's lease
 * runs it. Absent on a single node, where every session runs here.
 */
export interface RunGate {
  /** True when this node holds (or just took) the session's lease. */
  acquire(sessionId: string): Promise<boolean>;
  /**
   * The result of the run on another node that consumes `messageId`. The wait is registered
   * before this returns, so a run that ends at once is not missed.
   */
  remoteResult(sessionId: string, messageId: string): Promise<RunResult>;
  /** This node runs the message after all: drop the wait remoteResult registered. */
  forgetRemoteResult(sessionId: string, messageId: string): void;
  /** Runs `here` when this node owns the session (or may take it), else has the owner act and returns its answer. */
  control<T>(sessionId: string, action: ControlAction, here: () => Promise<T>): Promise<T>;
  /**
   * The fence a run starting now writes its session through (its lease checked in every
   * write, a signal aborted when the lease is lost); undefined when this node holds none.
   */
  openRun(sessionId: string): Promise<RunFence | undefined>;
  /** True while this node holds the session's lease (as far as it knows). */
  holds(sessionId: string): boolean;
  /** Gives the idle session's lease up (its live state here is gone): any node may take it at its next message. */
  release(sessionId: string): Promise<void>;
}

/** Messages sent here that no run here consumed: their senders get the owner's result instead. */
export function handPendingToOwner(gate: RunGate, id: string, live: LiveSession): void {
  for (const [messageId, waiter] of live.pending) void gate.remoteResult(id, messageId).then(waiter.resolve);
  live.pending.clear();
}

/** The result of a run that could not start here because another node holds the session. */
export function notOwnerResult(id: string): RunResult {
  return { content: null, finishReason: "error", stopReason: "error", messageId: null, usage: { ...ZERO_USAGE }, iterations: 0, error: { code: "LEASE_LOST", message: `session "${id}" is held by another node` } };
}

/**
 * A message was just stored for an idle session: the lease holder runs it (`start`); any
 * other node resolves the message's waiter with the owner's result.
 */
export async function runHereOrAwaitOwner(gate: RunGate, log: Logger, id: string, live: LiveSession, messageId: string, start: () => void): Promise<void> {
  // Waiting first: the owner may run the message and end before acquire() answers here.
  const remote = gate.remoteResult(id, messageId);
  try {
    if (await gate.acquire(id)) {
      gate.forgetRemoteResult(id, messageId);
      start();
      return;
    }
    const result = await remote;
    live.pending.get(messageId)?.resolve(result);
    live.pending.delete(messageId);
  } catch (error) {
    log.warn("message could not be handed to the session's owner", { sessionId: id, error: String(error) });
  }
}

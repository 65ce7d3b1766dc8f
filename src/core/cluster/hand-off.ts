import type { Logger } from "../../base/log.js";
import type { RunResult } from "../../engines/types.js";
import type { LiveSession } from "../live-session.js";

/** What a node knows of the runs other nodes make of messages sent to it. */
export interface OwnerResults {
  /** True when this node holds (or just took) the session's lease. */
  claim(sessionId: string): Promise<boolean>;
  /**
   * The result of the run on another node that consumes `messageId`. The wait is registered
   * before this returns, so a run that ends at once is not missed.
   */
  remoteResult(sessionId: string, messageId: string): Promise<RunResult>;
  /** This node runs the message after all: drop the wait remoteResult registered. */
  forgetRemoteResult(sessionId: string, messageId: string): void;
}

/** Messages sent here that no run here consumed: their senders get the owner's result instead. */
export function handPendingToOwner(owners: OwnerResults, id: string, live: LiveSession): void {
  for (const [messageId, waiter] of live.pending) void owners.remoteResult(id, messageId).then(waiter.resolve);
  live.pending.clear();
}

/**
 * A message was just stored for an idle session: the lease holder runs it (`start`); any
 * other node resolves the message's waiter with the owner's result.
 */
export async function runHereOrAwaitOwner(owners: OwnerResults, log: Logger, id: string, live: LiveSession, messageId: string, start: () => void): Promise<void> {
  // Waiting first: the owner may run the message and end before claim() answers here.
  const remote = owners.remoteResult(id, messageId);
  try {
    if (await owners.claim(id)) {
      owners.forgetRemoteResult(id, messageId);
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

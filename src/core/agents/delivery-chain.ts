import type { MessageRow, SessionRow } from "../../store/store.js";

/** A reply produced by a target for one async message. */
export interface AgentReply {
  text: string;
  finishReason: string;
  role: "seed" | "follower";
  /** True for a msg#2+ reply delivered while the target's run goes on. */
  midRun: boolean;
}

/** One async message waiting for its reply (msg#1 = seed, msg#2+ = follower). */
export interface Waiter {
  correlationId: string;
  callerId: string;
  role: "seed" | "follower";
  fullSteps: boolean;
  messageId: string | null;
  /** The stored user row once the target drained it. */
  drainedRow: MessageRow | null;
  settled: boolean;
  /** A sync call from the same caller that takes this reply instead of a delivery. */
  taker: ((reply: AgentReply) => void) | null;
  /** Re-attached after a restart from its durable inbox item: no send receipt, the run-end hook answers it. */
  recovered: boolean;
}

/** The dispatch chain of one target: its seed (while in flight) and its followers. */
export interface Chain {
  target: Pick<SessionRow, "id" | "agent" | "instance_name">;
  seed: Waiter | null;
  followers: Map<string, Waiter>;
  /** Seeds re-attached after a restart (normally one; `seed` points at the first). */
  recovered: Map<string, Waiter>;
  unobserve: () => void;
}

/** A waiter not yet sent, drained or answered. */
export function newWaiter(fields: Pick<Waiter, "correlationId" | "callerId" | "role" | "fullSteps"> & Partial<Waiter>): Waiter {
  return { messageId: null, drainedRow: null, settled: false, taker: null, recovered: false, ...fields };
}

/** A seed found in a durable inbox or drained row: it answers when the run that consumed it ends. */
export function attachRecoveredSeed(chain: Chain, waiter: Waiter): void {
  chain.recovered.set(waiter.correlationId, waiter);
  chain.seed ??= waiter;
}

/** True when the chain already waits for this correlation id. */
export function knowsCorrelation(chain: Chain, correlationId: string): boolean {
  return chain.seed?.correlationId === correlationId || chain.recovered.has(correlationId) || chain.followers.has(correlationId);
}

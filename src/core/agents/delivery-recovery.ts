import type { InboxItem, MessageRow, Store } from "../../store/store.js";
import type { Chain, Waiter } from "./delivery-chain.js";
import { newWaiter } from "./delivery-chain.js";

/** A msg#1 still waiting in a target's durable inbox, re-attached after a restart. */
export interface InboxSeed {
  target: Chain["target"];
  waiter: Waiter;
}

/** Every async msg#1 still in the inbox of an open session (msg#2+ are not re-attached: their mid-run replies are best-effort). */
export async function seedsInInboxes(store: Store): Promise<InboxSeed[]> {
  const seeds: InboxSeed[] = [];
  for (const targetId of await store.sessionsWithInbox()) {
    const target = await store.getSession(targetId);
    if (!target || target.status === "closed") continue;
    for (const item of await store.listInbox(targetId)) {
      const waiter = inboxSeed(item);
      if (waiter) seeds.push({ target, waiter });
    }
  }
  return seeds;
}

function inboxSeed(item: InboxItem): Waiter | null {
  const meta = item.meta ?? {};
  const correlationId = meta.agentCorrelation;
  const callerId = meta.replyTo ?? meta.fromSessionId;
  if (meta.async_inform !== true || meta.dispatch_role !== "msg#1" || typeof correlationId !== "string" || typeof callerId !== "string") return null;
  return newWaiter({ correlationId, callerId, role: "seed", fullSteps: meta.fullSteps === true, messageId: item.id, recovered: true });
}

/** The waiter a drained async message stands for, from its meta (another node may have sent it). */
export function drainedWaiter(row: MessageRow): Waiter | null {
  const meta = row.meta ?? {};
  const { agentCorrelation: correlationId, replyTo: callerId } = meta;
  if (meta.async_inform !== true || typeof correlationId !== "string" || typeof callerId !== "string") return null;
  const role = meta.dispatch_role === "msg#1" ? "seed" : "follower";
  return newWaiter({ correlationId, callerId, role, fullSteps: meta.fullSteps === true, messageId: row.id, drainedRow: row, recovered: role === "seed" });
}

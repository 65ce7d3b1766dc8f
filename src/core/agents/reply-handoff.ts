import { errorMessage, isVeilError } from "../../errors.js";
import type { Store } from "../../store/store.js";
import type { Logger } from "../../tools/types.js";
import type { Clock } from "../../base/clock.js";
import type { IdGenerator } from "../../base/ids.js";
import type { RunResult } from "../../engines/types.js";
import type { SessionManager } from "../session-manager.js";
import type { AgentReply, Chain, Waiter } from "./delivery-chain.js";
import { formatFullSteps, stillRunningReminder, wrapAgentMessage } from "./messages.js";

export interface HandoffDeps {
  sessions: Pick<SessionManager, "send">;
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  log: Logger;
}

/** Hands a reply to the caller's session as a new user message (kept in its inbox when it is suspended or the runtime stops). */
export async function deliverReply(deps: HandoffDeps, chain: Chain, waiter: Waiter, reply: AgentReply): Promise<void> {
  if (!chain.target.agent) chain.target = (await deps.store.getSession(chain.target.id)) ?? chain.target;
  const { target } = chain;
  const body = reply.midRun ? `${stillRunningReminder(target.instance_name, target.id)}\n${reply.text}` : reply.text;
  const content = wrapAgentMessage(target.agent, target.id, body);
  const meta = {
    source: "agent",
    fromSessionId: target.id,
    fromAgent: target.agent,
    instanceName: target.instance_name,
    correlationId: waiter.correlationId,
    inReplyTo: waiter.messageId,
    dispatch_role: reply.role === "seed" ? "msg#1" : "msg#2+",
    midRun: reply.midRun,
  };
  try {
    await deps.sessions.send(waiter.callerId, content, { meta });
  } catch (error) {
    if (isVeilError(error) && (error.code === "SESSION_SUSPENDED" || error.code === "CANCELLED")) {
      // Kept in the durable inbox: the SessionManager delivers it when the caller resumes, or
      // (CANCELLED: the runtime is shutting down) when the next runtime's recover() runs.
      const id = deps.ids.next("msg");
      await deps.store.addInbox({ id, session_id: waiter.callerId, content, meta, created_at: new Date(deps.clock.now()).toISOString() });
    } else {
      deps.log.warn("agent reply could not be delivered", { from: target.id, to: waiter.callerId, error: errorMessage(error) });
      await auditWaiter(deps.store, chain, waiter, "agent.undeliverable", { error: errorMessage(error) }).catch(() => undefined);
      return;
    }
  }
  await auditWaiter(deps.store, chain, waiter, "agent.delivered", { role: reply.role, midRun: reply.midRun });
}

/** An audit row on the target session about one waiter's reply. */
export async function auditWaiter(store: Store, chain: Chain, waiter: Waiter, kind: string, data: Record<string, unknown>): Promise<void> {
  await store.addAudit({
    session_id: chain.target.id,
    kind,
    data: { ...data, callerId: waiter.callerId, correlationId: waiter.correlationId, messageId: waiter.messageId, role: waiter.role },
  });
}

/** Assistant steps after `messageId` up to the run's last message. */
export async function stepsLog(store: Store, targetId: string, messageId: string, result: RunResult): Promise<string> {
  const start = await store.getMessage(messageId);
  const end = result.messageId ? await store.getMessage(result.messageId) : undefined;
  const rows = await store.listMessages(targetId, { afterSeq: start?.seq ?? 0 });
  return formatFullSteps(end ? rows.filter((r) => r.seq <= end.seq) : rows);
}

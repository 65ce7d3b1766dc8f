import type { SessionRow, Store } from "../../store/store.js";
import type { OtherSessionWrites } from "../../tools/types.js";

/** The caller's last contact with a target: messages after `afterSeq` count, except the contact message itself. */
export interface Contact {
  afterSeq: number;
  messageId?: string;
  at: string;
}

export interface Counters {
  messages: number;
  tools: number;
}

function contactKey(callerId: string): string {
  return `agents.contact.${callerId}`;
}

/**
 * Records "now" as the caller's last contact with the target (counters are
 * since the caller's last agent_message to that session, or the spawn-time baseline).
 */
export async function recordContact(store: Pick<Store, "listMessages">, writes: OtherSessionWrites, targetId: string, callerId: string, at: string): Promise<void> {
  const rows = await store.listMessages(targetId);
  const afterSeq = rows.length > 0 ? rows[rows.length - 1]!.seq : 0;
  await writes.setMeta(targetId, contactKey(callerId), { afterSeq, at } satisfies Contact);
}

/** Names the message that made the contact, so it is not counted as news. */
export async function noteContactMessage(store: Pick<Store, "getSessionMeta">, writes: OtherSessionWrites, targetId: string, callerId: string, messageId: string): Promise<void> {
  const contact = await store.getSessionMeta<Contact>(targetId, contactKey(callerId));
  if (contact) await writes.setMeta(targetId, contactKey(callerId), { ...contact, messageId });
}

/** Messages (user + assistant) and tool results since the caller's last contact; all of them without one. */
export async function countersSince(store: Store, target: SessionRow, callerId: string): Promise<Counters> {
  const contact = await store.getSessionMeta<Contact>(target.id, contactKey(callerId));
  const rows = await store.listMessages(target.id, { afterSeq: contact?.afterSeq ?? 0 });
  let messages = 0;
  let tools = 0;
  for (const row of rows) {
    if (contact?.messageId && row.id === contact.messageId) continue;
    if (row.role === "tool") tools++;
    else if (row.role === "user" || row.role === "assistant") messages++;
  }
  return { messages, tools };
}

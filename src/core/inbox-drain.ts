import type { MessageRow, Store } from "../store/store.js";
import { rowsToMessages } from "./context-builder.js";
import { withoutRunOptions } from "./inbox-run-options.js";
import type { LiveSession } from "./live-session.js";
import type { SessionPlacement } from "./placement.js";
import type { RunRecorder } from "./recorder.js";
import type { RunInbox } from "./run.js";

/** What a run reads of its session's inbox: the next inputs at a boundary, and the rest at its end. */
export function runInbox(id: string, live: LiveSession, recorder: RunRecorder, store: Store, placement: Pick<SessionPlacement, "consumedHere">): RunInbox {
  return {
    nextInputs: async () => rowsToMessages(await drainInbox(id, live, recorder, store, placement)),
    hasPendingInput: () => live.pending.size > 0,
    drainRest: () => drainInbox(id, live, recorder, store, placement),
  };
}

/** Moves this session's inbox into the history, in arrival order, exactly once. */
async function drainInbox(id: string, live: LiveSession, recorder: RunRecorder, store: Store, placement: Pick<SessionPlacement, "consumedHere">): Promise<MessageRow[]> {
  if (!live.inbox.mustRead(live.pending.size > 0)) return [];
  const items = await store.listInbox(id);
  if (items.length === 0) return [];
  const rows = await recorder.deliverInbox(items, (item) => ({ id: item.id, session_id: id, role: "user", content: item.content, meta: withoutRunOptions(item.meta) }));
  for (const row of rows) {
    const waiter = live.pending.get(row.id);
    if (waiter) {
      live.pending.delete(row.id);
      live.consumed.push(waiter.resolve);
      // Sent here while another node held the session, run here after a takeover.
      placement.consumedHere(id, row.id);
    }
  }
  return rows;
}

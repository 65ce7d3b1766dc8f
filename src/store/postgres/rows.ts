import { messageFromRaw, type RawMessage } from "../sqlite/rows.js";
import type { MessageRow } from "../store.js";

/*
 * Row shapes are the SQLite store's (same column names, JSON as TEXT), so its converters
 * serve here too (re-exported below). Only booleans differ: PostgreSQL has real ones.
 */
export { auditFromRaw, inboxFromRaw, sessionFromRaw, toJson, type RawAudit, type RawInbox, type RawSession } from "../sqlite/rows.js";

export interface PgMessage extends Omit<RawMessage, "compacted"> {
  compacted: boolean;
}

export function messageFromPg(raw: PgMessage): MessageRow {
  return { ...messageFromRaw({ ...raw, compacted: 0 }), compacted: raw.compacted };
}

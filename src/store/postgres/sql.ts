import { AUTOMATION_SQL } from "./automation-sql.js";
import { CHANNELS } from "./channels.js";
import { ACCESS_SQL } from "./access-sql.js";
import { CLUSTER_SQL } from "./cluster-sql.js";
import { FENCED_SQL, TOOL_CALL_UPSERT } from "./fenced-sql.js";

/**
 * Every fixed statement the PostgreSQL store runs. Each is sent as a named query, so a
 * connection parses and plans it once and then only binds values.
 */

const SESSION_COLUMNS = `id, agent, mode, status, parent_session_id, spawn_depth, instance_name, model, reasoning,
  budget_override, objective, success_criteria, prompt_tokens, completion_tokens, total_tokens, cached_tokens,
  cache_creation_tokens, reasoning_tokens, context_size, cost_usd, title, origin, ephemeral, forked_from, owner_key, created_at, updated_at`;
const MESSAGE_COLUMNS = "id, session_id, seq, role, content, thinking, tool_calls, tool_call_id, finish_reason, token_usage, meta, kind, compacted, reverted, created_at";
const TOOL_CALL_COLUMNS = "id, session_id, message_id, name, arguments, state, output, started_at, ended_at";

export { CHANNELS };

export const SQL = {
  insertSession: `INSERT INTO sessions (id, agent, mode, status, parent_session_id, spawn_depth, instance_name,
      model, reasoning, budget_override, objective, success_criteria, title, origin, ephemeral, owner_key, created_at, updated_at, forked_from)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $14, $15, $16,
      -- A sub-agent belongs to its parent's key.
      COALESCE($17::text, (SELECT owner_key FROM sessions WHERE id = $5)), $13, $13, $18)
    RETURNING ${SESSION_COLUMNS}`,
  getSession: `SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = $1`,
  // $3 is folded to lower case already; LIMIT NULL is no limit.
  listSessions: `SELECT ${SESSION_COLUMNS} FROM sessions
    WHERE ($1::text IS NULL OR parent_session_id = $1) AND ($2::text IS NULL OR status = $2)
      AND ($3::text IS NULL OR strpos(lower(coalesce(title, '') || ' ' || id || ' ' || agent || ' ' || coalesce(instance_name, '')), $3) > 0)
    ORDER BY CASE WHEN $4::boolean THEN updated_at END DESC, CASE WHEN $4::boolean THEN -pos ELSE pos END
    LIMIT $5`,
  // The same, of one key's sessions ($6), on the owner index.
  listOwnedSessions: `SELECT ${SESSION_COLUMNS} FROM sessions
    WHERE owner_key = $6 AND ($1::text IS NULL OR parent_session_id = $1) AND ($2::text IS NULL OR status = $2)
      AND ($3::text IS NULL OR strpos(lower(coalesce(title, '') || ' ' || id || ' ' || agent || ' ' || coalesce(instance_name, '')), $3) > 0)
    ORDER BY CASE WHEN $4::boolean THEN updated_at END DESC, CASE WHEN $4::boolean THEN -pos ELSE pos END
    LIMIT $5`,
  setTitle: `UPDATE sessions SET title = $2, ephemeral = CASE WHEN $3::boolean THEN ephemeral ELSE false END
    WHERE id = $1 AND (NOT $3::boolean OR title IS NULL)
    RETURNING ${SESSION_COLUMNS}`,
  findChild: `SELECT ${SESSION_COLUMNS} FROM sessions WHERE parent_session_id = $1 AND instance_name = $2
    ORDER BY pos DESC LIMIT 1`,

  listMessages: `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
  getMessage: `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE id = $1`,
  updateMessageMeta: "UPDATE messages SET meta = $2 WHERE id = $1 AND session_id = $3",
  setCompacted: "UPDATE messages SET compacted = true WHERE session_id = $1 AND id = ANY ($2::text[])",

  upsertToolCall: `INSERT INTO tool_calls (id, session_id, message_id, name, arguments, state, output, started_at, ended_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
    ${TOOL_CALL_UPSERT}`,
  listToolCalls: `SELECT ${TOOL_CALL_COLUMNS} FROM tool_calls
    WHERE session_id = $1 AND ($2::text[] IS NULL OR state = ANY ($2::text[]))
    ORDER BY pos`,

  // The signal is part of the statement: it goes out exactly when the row commits.
  addInbox: `WITH added AS (
      INSERT INTO inbox (id, session_id, content, meta, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING session_id
    )
    SELECT pg_notify('${CHANNELS.inbox}', session_id) FROM added`,
  listInbox: "SELECT id, session_id, content, meta, created_at FROM inbox WHERE session_id = $1 ORDER BY pos",
  takeInbox: "DELETE FROM inbox WHERE id = $1 AND session_id = $2",
  sessionsWithInbox: "SELECT session_id FROM inbox GROUP BY session_id ORDER BY MIN(pos)",

  markRead: `INSERT INTO read_markers (session_id, path, read_at) VALUES ($1, $2, $3)
    ON CONFLICT (session_id, path) DO UPDATE SET read_at = excluded.read_at`,
  hasRead: "SELECT 1 FROM read_markers WHERE session_id = $1 AND path = $2",
  clearReadMarkers: "DELETE FROM read_markers WHERE session_id = $1",

  deleteTodos: "DELETE FROM todos WHERE session_id = $1",
  // The whole list in one statement: arrays of fields, unnested in order.
  insertTodos: `INSERT INTO todos (session_id, position, id, content, status, priority)
    SELECT $1, t.ord - 1, t.id, t.content, t.status, t.priority
    FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS t (id, content, status, priority, ord)`,
  getTodos: "SELECT id, content, status, priority FROM todos WHERE session_id = $1 ORDER BY position",

  setWakeup: `INSERT INTO wakeups (session_id, time, interval_ms, message, loop, next_fire_at, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (session_id) DO UPDATE SET time = excluded.time, interval_ms = excluded.interval_ms,
      message = excluded.message, loop = excluded.loop, next_fire_at = excluded.next_fire_at,
      created_at = excluded.created_at`,
  getWakeup: "SELECT session_id, time, interval_ms, message, loop, next_fire_at, created_at FROM wakeups WHERE session_id = $1",
  deleteWakeup: "DELETE FROM wakeups WHERE session_id = $1",
  listWakeups: "SELECT session_id, time, interval_ms, message, loop, next_fire_at, created_at FROM wakeups ORDER BY next_fire_at, session_id",

  setMeta: `INSERT INTO session_meta (session_id, key, value, updated_at) VALUES ($1, $2, $3, $4)
    ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
  deleteMeta: "DELETE FROM session_meta WHERE session_id = $1 AND key = $2",
  getMeta: "SELECT value FROM session_meta WHERE session_id = $1 AND key = $2",

  listEvents: "SELECT gseq, session_id, seq, type, ts, data FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
  listEventsGlobal: "SELECT gseq, session_id, seq, type, ts, data FROM events WHERE gseq > $1 ORDER BY gseq LIMIT $2",
  lastEventSeq: "SELECT COALESCE(MAX(seq), 0)::int AS n FROM events WHERE session_id = $1",
  lastEventGseq: "SELECT COALESCE(MAX(gseq), 0) AS n FROM events",

  listAudit: `SELECT id, session_id, kind, data, created_at FROM audit
    WHERE ($1::text IS NULL OR session_id = $1) AND ($2::text IS NULL OR kind = $2)
    ORDER BY id`,

  ...ACCESS_SQL,
  ...CLUSTER_SQL,
  ...FENCED_SQL,
  ...AUTOMATION_SQL,
} as const;

export type StatementName = keyof typeof SQL;

/** Columns updateSession may set, by patch key (one column each, JSON ones serialized). */
export const SESSION_PATCH_COLUMNS = ["status", "model", "reasoning", "budget_override", "context_size", "ephemeral"] as const;
export const USAGE_COLUMNS = ["prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens", "cache_creation_tokens", "reasoning_tokens"] as const;
export { SESSION_COLUMNS };

import { CHANNELS } from "./channels.js";

/*
 * The run's hot writes as single statements, each in a plain and a fenced form (store/
 * cluster.ts `fenced`). A fenced form calls veil_fence() (migration 4) inside the
 * statement, before the row it guards changes: the lease row is share-locked until the
 * statement commits, and a lost lease raises VL001 (LEASE_LOST), rolling the statement
 * back. One round trip either way, where a checked transaction takes four.
 */

/** SQLSTATE veil_fence() raises when the lease is lost; its DETAIL is the session id. */
export const LEASE_LOST_SQLSTATE = "VL001";

/** `AND veil_fence(...)` with the session in `session` and node, generation in $n, $n+1. */
const fenceAt = (session: string, n: number) => ` AND veil_fence(${session}::text, $${n}::text, $${n + 1}::bigint)`;

const MESSAGE_VALUES = "$1, $2, next.last_message_seq, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12";
const MESSAGE_INSERT = "INSERT INTO messages (id, session_id, seq, role, content, thinking, tool_calls, tool_call_id, finish_reason, token_usage, meta, kind, created_at)";

/** Bumping the counter takes the session's row lock until commit (gap-free seq); the fence guards that bump. */
const nextSeq = (fence: string, extra = "") => `next AS (
      UPDATE sessions SET last_message_seq = last_message_seq + 1${extra} WHERE id = $2${fence} RETURNING last_message_seq
    )`;

/**
 * The assistant step's optional spend ($16–$24, all null for none), added by the same bump
 * that numbers the row: the call's usage costs no round trip of its own.
 */
const STEP_SPEND = `,
      prompt_tokens = prompt_tokens + COALESCE($16::bigint, 0),
      completion_tokens = completion_tokens + COALESCE($17::bigint, 0),
      total_tokens = total_tokens + COALESCE($18::bigint, 0),
      cached_tokens = cached_tokens + COALESCE($19::bigint, 0),
      cache_creation_tokens = cache_creation_tokens + COALESCE($20::bigint, 0),
      reasoning_tokens = reasoning_tokens + COALESCE($21::bigint, 0),
      context_size = COALESCE($22::bigint, context_size),
      updated_at = COALESCE($23::text, updated_at),
      cost_usd = cost_usd + COALESCE($24::double precision, 0)`;

const insertMessage = (fence: string) => `WITH ${nextSeq(fence)}
    ${MESSAGE_INSERT}
    SELECT ${MESSAGE_VALUES} FROM next
    RETURNING seq`;

/** An upsert of a tool call keeps what a later write leaves out (output, times). */
export const TOOL_CALL_UPSERT = `ON CONFLICT (session_id, id) DO UPDATE SET
      message_id = excluded.message_id,
      name = excluded.name,
      arguments = excluded.arguments,
      state = excluded.state,
      output = COALESCE(excluded.output, tool_calls.output),
      started_at = COALESCE(excluded.started_at, tool_calls.started_at),
      ended_at = COALESCE(excluded.ended_at, tool_calls.ended_at)`;

// A tool's audit row (one per memory or log write): on the run's hot path, so fenced in its own statement.
const addAudit = (fence: string) => `INSERT INTO audit (session_id, kind, data, created_at)
    SELECT $1::text, $2::text, $3::text, $4::text WHERE TRUE${fence}`;

// The assistant message and its pending calls in one statement; the calls wait for the message (EXISTS msg).
const appendAssistantStep = (fence: string) => `WITH ${nextSeq(fence, STEP_SPEND)}, msg AS (
      ${MESSAGE_INSERT}
      SELECT ${MESSAGE_VALUES} FROM next
      RETURNING seq
    ), calls AS (
      INSERT INTO tool_calls (id, session_id, message_id, name, arguments, state)
      SELECT c.id, $2, $1, c.name, c.arguments, 'pending'
      FROM unnest($13::text[], $14::text[], $15::text[]) WITH ORDINALITY AS c (id, name, arguments, ord)
      WHERE EXISTS (SELECT 1 FROM msg)
      ORDER BY c.ord
      ${TOOL_CALL_UPSERT}
    )
    SELECT seq FROM msg`;

const CALL_STATE = (state: string, output: string, now: string) => `state = ${state},
      output = ${output},
      started_at = CASE WHEN started_at IS NULL AND ${state} IN ('validating', 'executing') THEN ${now} ELSE started_at END,
      ended_at = CASE WHEN ${state} IN ('done', 'error', 'cancelled') THEN COALESCE(ended_at, ${now}) ELSE ended_at END`;

// The tool's result row and its call's terminal state in one statement.
const recordToolResult = (fence: string) => `WITH ${nextSeq(fence)}, msg AS (
      ${MESSAGE_INSERT}
      SELECT ${MESSAGE_VALUES} FROM next
      RETURNING seq
    ), call AS (
      UPDATE tool_calls SET ${CALL_STATE("$14::text", "$4", "$15")}
      WHERE id = $13 AND session_id = $2 AND EXISTS (SELECT 1 FROM msg)
    )
    SELECT seq FROM msg`;

// started_at: the first time the call leaves "pending"; ended_at: the first terminal state.
const setToolCallState = (fence: string) => `UPDATE tool_calls SET ${CALL_STATE("$3::text", "CASE WHEN $4::boolean THEN $5 ELSE output END", "$6")}
    WHERE id = $1 AND session_id = $2${fence}`;

const addTokenUsage = (fence: string) => `UPDATE sessions SET
      prompt_tokens = prompt_tokens + $2,
      completion_tokens = completion_tokens + $3,
      total_tokens = total_tokens + $4,
      cached_tokens = cached_tokens + $5,
      cache_creation_tokens = cache_creation_tokens + $6,
      reasoning_tokens = reasoning_tokens + $7,
      context_size = $8,
      updated_at = $9,
      cost_usd = cost_usd + $10
    WHERE id = $1${fence}`;

// See the event log migration: the counter's row lock orders commits by gseq. One
// statement, so a refused row (repeated seq, lost lease) rolls the counter back with the
// batch, and the signal (the highest gseq) is delivered when, and only if, the batch commits.
const appendEvents = (fence: string) => `WITH bump AS (
      UPDATE event_counter SET last_gseq = last_gseq + cardinality($1::text[])${fence ? ` WHERE ${fence}` : ""} RETURNING last_gseq
    ), added AS (
      INSERT INTO events (gseq, session_id, seq, type, ts, data)
      SELECT bump.last_gseq - cardinality($1::text[]) + e.ord, e.session_id, e.seq, e.type, e.ts, e.data
      FROM bump, unnest($1::text[], $2::int[], $3::text[], $4::bigint[], $5::text[]) WITH ORDINALITY AS e (session_id, seq, type, ts, data, ord)
      RETURNING gseq
    )
    SELECT array_agg(gseq ORDER BY gseq) AS gseqs, pg_notify('${CHANNELS.events}', MAX(gseq)::text) AS notified FROM added`;
// Every lease of the batch: sessions $6, nodes $7, generations $8, share-locked in session
// order (as renewLeases locks them), so a heartbeat and a batch never deadlock.
const EVENTS_FENCE = "(SELECT bool_and(veil_fence(f.s, f.n, f.g)) FROM (SELECT * FROM unnest($6::text[], $7::text[], $8::bigint[]) AS u (s, n, g) ORDER BY s) AS f)";

export const FENCED_SQL = {
  insertMessage: insertMessage(""),
  insertMessageFenced: insertMessage(fenceAt("$2", 13)),
  appendAssistantStep: appendAssistantStep(""),
  appendAssistantStepFenced: appendAssistantStep(fenceAt("$2", 25)),
  recordToolResult: recordToolResult(""),
  recordToolResultFenced: recordToolResult(fenceAt("$2", 16)),
  setToolCallState: setToolCallState(""),
  setToolCallStateFenced: setToolCallState(fenceAt("$2", 7)),
  addTokenUsage: addTokenUsage(""),
  addTokenUsageFenced: addTokenUsage(fenceAt("$1", 11)),
  addAudit: addAudit(""),
  addAuditFenced: addAudit(fenceAt("$1", 5)),
  appendEvents: appendEvents(""),
  appendEventsFenced: appendEvents(EVENTS_FENCE),
} as const;

/** Names of the statements that have a fenced form (`<name>Fenced`, node and generation appended). */
export type FenceableStatement = "insertMessage" | "appendAssistantStep" | "recordToolResult" | "setToolCallState" | "addTokenUsage" | "addAudit";

/** The fenced form of `updateSession`'s dynamic UPDATE: node and generation are $n, $n+1. */
export function updateSessionFence(n: number): string {
  return fenceAt("$1", n);
}

/** Migration 4: the fence check, raising VL001 (DETAIL: the session) when the lease is gone. */
export const FENCE_FUNCTION = `
CREATE FUNCTION veil_fence(fenced_session TEXT, fenced_node TEXT, fenced_generation BIGINT) RETURNS BOOLEAN
LANGUAGE plpgsql VOLATILE AS $fence$
BEGIN
  PERFORM 1 FROM leases
    WHERE session_id = fenced_session AND node_id = fenced_node AND generation = fenced_generation AND NOT released
    FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'the lease of session % (node %, generation %) is lost', fenced_session, fenced_node, fenced_generation
      USING ERRCODE = '${LEASE_LOST_SQLSTATE}', DETAIL = fenced_session;
  END IF;
  RETURN true;
END
$fence$;
`;

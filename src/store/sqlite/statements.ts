import type Database from "better-sqlite3";

/** Every statement the store runs, as SQL; prepared once per connection. */
const SQL = {
  insertSession: `INSERT INTO sessions (id, agent, mode, status, parent_session_id, spawn_depth, instance_name,
      model, reasoning, budget_override, objective, success_criteria, title, origin, ephemeral, forked_from, owner_key, created_at, updated_at)
    VALUES (@id, @agent, @mode, @status, @parent_session_id, @spawn_depth, @instance_name,
      @model, @reasoning, @budget_override, @objective, @success_criteria, @title, @origin, @ephemeral, @forked_from,
      -- A sub-agent belongs to its parent's key.
      COALESCE(@owner_key, (SELECT owner_key FROM sessions WHERE id = @parent_session_id)), @now, @now)
    RETURNING *`,
  getSession: "SELECT * FROM sessions WHERE id = ?",
  // veil_fold: JavaScript's toLowerCase (SQLite's lower() folds ASCII only); @query is folded already.
  listSessions: `SELECT * FROM sessions
    WHERE (@parent IS NULL OR parent_session_id = @parent) AND (@status IS NULL OR status = @status)
      AND (@query IS NULL OR instr(veil_fold(coalesce(title, '') || ' ' || id || ' ' || agent || ' ' || coalesce(instance_name, '')), @query) > 0)
    ORDER BY CASE WHEN @by_activity THEN updated_at END DESC, CASE WHEN @by_activity THEN -rowid ELSE rowid END
    LIMIT @limit`,
  // The same, of one key's sessions, on the owner index.
  listOwnedSessions: `SELECT * FROM sessions
    WHERE owner_key = @owner AND (@parent IS NULL OR parent_session_id = @parent) AND (@status IS NULL OR status = @status)
      AND (@query IS NULL OR instr(veil_fold(coalesce(title, '') || ' ' || id || ' ' || agent || ' ' || coalesce(instance_name, '')), @query) > 0)
    ORDER BY CASE WHEN @by_activity THEN updated_at END DESC, CASE WHEN @by_activity THEN -rowid ELSE rowid END
    LIMIT @limit`,
  setTitle: `UPDATE sessions SET title = @title, ephemeral = CASE WHEN @if_unset THEN ephemeral ELSE 0 END
    WHERE id = @id AND (NOT @if_unset OR title IS NULL)
    RETURNING *`,
  // One static statement for every patch shape: @has_x = 1 means "set x".
  updateSession: `UPDATE sessions SET
      status = CASE WHEN @has_status THEN @status ELSE status END,
      model = CASE WHEN @has_model THEN @model ELSE model END,
      reasoning = CASE WHEN @has_reasoning THEN @reasoning ELSE reasoning END,
      budget_override = CASE WHEN @has_budget THEN @budget_override ELSE budget_override END,
      prompt_tokens = CASE WHEN @has_usage THEN @prompt_tokens ELSE prompt_tokens END,
      completion_tokens = CASE WHEN @has_usage THEN @completion_tokens ELSE completion_tokens END,
      total_tokens = CASE WHEN @has_usage THEN @total_tokens ELSE total_tokens END,
      cached_tokens = CASE WHEN @has_usage THEN @cached_tokens ELSE cached_tokens END,
      cache_creation_tokens = CASE WHEN @has_usage THEN @cache_creation_tokens ELSE cache_creation_tokens END,
      reasoning_tokens = CASE WHEN @has_usage THEN @reasoning_tokens ELSE reasoning_tokens END,
      context_size = CASE WHEN @has_context THEN @context_size ELSE context_size END,
      ephemeral = CASE WHEN @has_ephemeral THEN @ephemeral ELSE ephemeral END,
      updated_at = @now
    WHERE id = @id
    RETURNING *`,
  addTokenUsage: `UPDATE sessions SET
      prompt_tokens = prompt_tokens + @prompt_tokens,
      completion_tokens = completion_tokens + @completion_tokens,
      total_tokens = total_tokens + @total_tokens,
      cached_tokens = cached_tokens + @cached_tokens,
      cache_creation_tokens = cache_creation_tokens + @cache_creation_tokens,
      reasoning_tokens = reasoning_tokens + @reasoning_tokens,
      context_size = @context_size,
      cost_usd = cost_usd + @cost_usd,
      updated_at = @now
    WHERE id = @id`,
  findChild: `SELECT * FROM sessions WHERE parent_session_id = ? AND instance_name = ?
    ORDER BY rowid DESC LIMIT 1`,

  // A single write statement is its own transaction: the seq read and the insert
  // happen under one write lock, and UNIQUE (session_id, seq) backs it up.
  insertMessage: `INSERT INTO messages (id, session_id, seq, role, content, thinking, tool_calls,
      tool_call_id, finish_reason, token_usage, meta, kind, created_at)
    VALUES (@id, @session_id,
      (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = @session_id),
      @role, @content, @thinking, @tool_calls, @tool_call_id, @finish_reason, @token_usage, @meta, @kind, @created_at)
    RETURNING seq`,
  setCompacted: "UPDATE messages SET compacted = 1 WHERE session_id = ? AND id = ?",
  listMessages: `SELECT * FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
  getMessage: "SELECT * FROM messages WHERE id = ?",
  updateMessageMeta: "UPDATE messages SET meta = ? WHERE id = ? AND session_id = ?",

  upsertToolCall: `INSERT INTO tool_calls (id, session_id, message_id, name, arguments, state, output, started_at, ended_at)
    VALUES (@id, @session_id, @message_id, @name, @arguments, @state, @output, @started_at, @ended_at)
    ON CONFLICT (session_id, id) DO UPDATE SET
      message_id = excluded.message_id,
      name = excluded.name,
      arguments = excluded.arguments,
      state = excluded.state,
      output = COALESCE(excluded.output, tool_calls.output),
      started_at = COALESCE(excluded.started_at, tool_calls.started_at),
      ended_at = COALESCE(excluded.ended_at, tool_calls.ended_at)`,
  // started_at: the first time the call leaves "pending"; ended_at: the first terminal state.
  setToolCallState: `UPDATE tool_calls SET
      state = @state,
      output = CASE WHEN @has_output THEN @output ELSE output END,
      started_at = CASE WHEN started_at IS NULL AND @state IN ('validating', 'executing') THEN @now ELSE started_at END,
      ended_at = CASE WHEN @state IN ('done', 'error', 'cancelled') THEN COALESCE(ended_at, @now) ELSE ended_at END
    WHERE id = @id AND session_id = @session_id`,
  listToolCalls: `SELECT id, session_id, message_id, name, arguments, state, output, started_at, ended_at
    FROM tool_calls
    WHERE session_id = @session_id AND (@states IS NULL OR state IN (SELECT value FROM json_each(@states)))
    ORDER BY rowid`,

  addInbox: `INSERT INTO inbox (id, session_id, content, meta, created_at)
    VALUES (@id, @session_id, @content, @meta, @created_at)`,
  listInbox: "SELECT * FROM inbox WHERE session_id = ? ORDER BY rowid",
  takeInbox: "DELETE FROM inbox WHERE id = ? AND session_id = ?",
  sessionsWithInbox: "SELECT session_id FROM inbox GROUP BY session_id ORDER BY MIN(rowid)",

  markRead: `INSERT INTO read_markers (session_id, path, read_at) VALUES (?, ?, ?)
    ON CONFLICT (session_id, path) DO UPDATE SET read_at = excluded.read_at`,
  hasRead: "SELECT 1 FROM read_markers WHERE session_id = ? AND path = ?",
  clearReadMarkers: "DELETE FROM read_markers WHERE session_id = ?",

  deleteTodos: "DELETE FROM todos WHERE session_id = ?",
  insertTodo: `INSERT INTO todos (session_id, position, id, content, status, priority)
    VALUES (@session_id, @position, @id, @content, @status, @priority)`,
  getTodos: "SELECT id, content, status, priority FROM todos WHERE session_id = ? ORDER BY position",

  setWakeup: `INSERT INTO wakeups (session_id, time, interval_ms, message, loop, next_fire_at, created_at)
    VALUES (@session_id, @time, @interval_ms, @message, @loop, @next_fire_at, @created_at)
    ON CONFLICT (session_id) DO UPDATE SET time = excluded.time, interval_ms = excluded.interval_ms,
      message = excluded.message, loop = excluded.loop, next_fire_at = excluded.next_fire_at,
      created_at = excluded.created_at`,
  getWakeup: "SELECT * FROM wakeups WHERE session_id = ?",
  deleteWakeup: "DELETE FROM wakeups WHERE session_id = ?",
  listWakeups: "SELECT * FROM wakeups ORDER BY next_fire_at, session_id",

  setMeta: `INSERT INTO session_meta (session_id, key, value, updated_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
  deleteMeta: "DELETE FROM session_meta WHERE session_id = ? AND key = ?",
  getMeta: "SELECT value FROM session_meta WHERE session_id = ? AND key = ?",

  insertEvent: `INSERT INTO events (session_id, seq, type, ts, data) VALUES (@session_id, @seq, @type, @ts, @data)
    RETURNING gseq`,
  listEvents: "SELECT * FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
  listEventsGlobal: "SELECT * FROM events WHERE gseq > ? ORDER BY gseq LIMIT ?",
  lastEventSeq: "SELECT COALESCE(MAX(seq), 0) AS n FROM events WHERE session_id = ?",
  lastEventGseq: "SELECT COALESCE(MAX(gseq), 0) AS n FROM events",

  addAudit: "INSERT INTO audit (session_id, kind, data, created_at) VALUES (?, ?, ?, ?)",
  listAudit: `SELECT * FROM audit
    WHERE (@session_id IS NULL OR session_id = @session_id) AND (@kind IS NULL OR kind = @kind)
    ORDER BY id`,
};

export type Statements = { readonly [K in keyof typeof SQL]: Database.Statement };

export function prepareStatements(db: Database.Database): Statements {
  return lazyStatements(db, SQL);
}

/**
 * The statements of `sql`, each prepared on its first use and kept for the connection's
 * life. Preparing all of the store's ~90 statements when it opens cost `veil run` a good
 * part of its start-up, while one run uses about a third of them.
 */
export function lazyStatements<K extends string>(db: Database.Database, sql: Readonly<Record<K, string>>): { readonly [P in K]: Database.Statement } {
  const prepared = {} as Record<K, Database.Statement>;
  for (const key of Object.keys(sql) as K[]) {
    Object.defineProperty(prepared, key, {
      enumerable: true,
      configurable: true,
      get() {
        const statement = db.prepare(sql[key]);
        Object.defineProperty(prepared, key, { value: statement, enumerable: true, writable: false });
        return statement;
      },
    });
  }
  return prepared;
}

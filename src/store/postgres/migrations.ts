import type pg from "pg";
import { MIGRATIONS_TABLE, runMigrations, type Migration } from "../migrations.js";
import { PG_ACCESS_SCHEMA } from "./access-sql.js";
import { FENCE_FUNCTION } from "./fenced-sql.js";

/** A PostgreSQL step: an SQL script. */
export type PgMigration = Migration<string>;

/*
 * Mirrors the SQLite schema (timestamps ISO-8601 TEXT, JSON values TEXT so they come back
 * byte for byte as written). `pos` identity columns stand in for SQLite's rowid where the
 * Store promises arrival order. `sessions.last_message_seq` is the per-session counter:
 * incrementing it takes the session's row lock, which serializes concurrent appends.
 */
const INITIAL_SCHEMA = `
CREATE TABLE sessions (
  pos BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
  id TEXT PRIMARY KEY,
  agent TEXT NOT NULL,
  mode TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('idle', 'running', 'suspended', 'closed')),
  parent_session_id TEXT,
  spawn_depth INTEGER NOT NULL DEFAULT 0,
  instance_name TEXT,
  model TEXT,
  reasoning TEXT,
  budget_override TEXT,
  objective TEXT,
  success_criteria TEXT,
  prompt_tokens BIGINT NOT NULL DEFAULT 0,
  completion_tokens BIGINT NOT NULL DEFAULT 0,
  total_tokens BIGINT NOT NULL DEFAULT 0,
  cached_tokens BIGINT NOT NULL DEFAULT 0,
  cache_creation_tokens BIGINT NOT NULL DEFAULT 0,
  reasoning_tokens BIGINT NOT NULL DEFAULT 0,
  context_size BIGINT NOT NULL DEFAULT 0,
  last_message_seq INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX sessions_parent ON sessions (parent_session_id);
CREATE INDEX sessions_status ON sessions (status);
CREATE UNIQUE INDEX sessions_parent_instance ON sessions (parent_session_id, instance_name)
  WHERE parent_session_id IS NOT NULL AND instance_name IS NOT NULL;

CREATE TABLE messages (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
  content TEXT,
  thinking TEXT,
  tool_calls TEXT,
  tool_call_id TEXT,
  finish_reason TEXT,
  token_usage TEXT,
  meta TEXT,
  created_at TEXT NOT NULL,
  UNIQUE (session_id, seq)
);

CREATE TABLE tool_calls (
  pos BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT NOT NULL,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  message_id TEXT NOT NULL,
  name TEXT NOT NULL,
  arguments TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'validating', 'executing', 'done', 'error', 'cancelled')),
  output TEXT,
  started_at TEXT,
  ended_at TEXT,
  PRIMARY KEY (session_id, id)
);
CREATE INDEX tool_calls_state ON tool_calls (session_id, state);

CREATE TABLE inbox (
  pos BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  content TEXT NOT NULL,
  meta TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX inbox_session ON inbox (session_id, pos);

CREATE TABLE read_markers (
  session_id TEXT NOT NULL,
  path TEXT NOT NULL,
  read_at TEXT NOT NULL,
  PRIMARY KEY (session_id, path)
);

CREATE TABLE todos (
  session_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  id TEXT NOT NULL,
  content TEXT NOT NULL,
  status TEXT NOT NULL,
  priority TEXT NOT NULL,
  PRIMARY KEY (session_id, position)
);

CREATE TABLE wakeups (
  session_id TEXT PRIMARY KEY,
  time TEXT NOT NULL,
  interval_ms BIGINT NOT NULL,
  message TEXT NOT NULL,
  loop BOOLEAN NOT NULL,
  next_fire_at BIGINT NOT NULL,
  created_at TEXT NOT NULL
);

CREATE TABLE session_meta (
  session_id TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (session_id, key)
);

CREATE TABLE audit (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  session_id TEXT,
  kind TEXT NOT NULL,
  data TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX audit_session ON audit (session_id);
CREATE INDEX audit_kind ON audit (kind);
`;

/*
 * The durable event log. gseq comes from the one-row counter, not a
 * sequence: bumping the counter holds its row lock until the appending transaction
 * commits, so appends commit in gseq order and a reader that has seen gseq N has seen
 * every event below N (a sequence hands out numbers that may commit out of order, and a
 * reader paging by "gseq > last" would skip the late one for good).
 */
const EVENT_LOG = `
CREATE TABLE event_counter (
  id BOOLEAN PRIMARY KEY DEFAULT true CHECK (id),
  last_gseq BIGINT NOT NULL
);
INSERT INTO event_counter (id, last_gseq) VALUES (true, 0);
CREATE TABLE events (
  gseq BIGINT PRIMARY KEY,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  ts BIGINT NOT NULL,
  data TEXT NOT NULL,
  UNIQUE (session_id, seq)
);
ALTER TABLE sessions ADD COLUMN cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN kind TEXT;
ALTER TABLE messages ADD COLUMN compacted BOOLEAN NOT NULL DEFAULT false;
`;

/*
 * Coordination of several nodes (store/cluster.ts); SQLite has no counterpart. Lease
 * times are the database's clock (timestamptz), so node clock skew does not matter.
 * Released leases keep their row and generation: a generation is never handed out twice.
 */
const CLUSTER = `
CREATE TABLE leases (
  session_id TEXT PRIMARY KEY,
  node_id TEXT NOT NULL,
  generation BIGINT NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL,
  released BOOLEAN NOT NULL DEFAULT false
);
CREATE INDEX leases_node ON leases (node_id) WHERE NOT released;
CREATE INDEX leases_expiry ON leases (expires_at) WHERE NOT released;

CREATE TABLE wakeup_claims (
  session_id TEXT NOT NULL,
  due_at BIGINT NOT NULL,
  node_id TEXT NOT NULL,
  claimed_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (session_id, due_at)
);

CREATE TABLE remote_methods (
  pos BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  node_id TEXT NOT NULL,
  method TEXT NOT NULL,
  data TEXT NOT NULL,
  created_at TEXT NOT NULL,
  resolved BOOLEAN NOT NULL DEFAULT false,
  result TEXT
);
`;

/** Titles, where a session came from, and whether it closes once idle (SQLite's step 3). */
const SESSION_TITLES = `
ALTER TABLE sessions ADD COLUMN title TEXT;
ALTER TABLE sessions ADD COLUMN origin TEXT NOT NULL DEFAULT 'api';
ALTER TABLE sessions ADD COLUMN ephemeral BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX sessions_activity ON sessions (updated_at);
`;

/** Schedules, their runs, inbound webhook receipts and outbound deliveries (SQLite's version 4). */
const AUTOMATION = `
CREATE TABLE schedules (
  pos BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
  id TEXT PRIMARY KEY,
  agent TEXT NOT NULL,
  prompt TEXT NOT NULL,
  cron TEXT,
  every_seconds DOUBLE PRECISION,
  session TEXT NOT NULL,
  enabled BOOLEAN NOT NULL,
  next_run_at BIGINT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  active_at BIGINT,
  active_session_id TEXT,
  active_node TEXT,
  active_seen_at BIGINT
);
CREATE TABLE schedule_runs (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  schedule_id TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
  at BIGINT NOT NULL,
  session_id TEXT,
  status TEXT NOT NULL CHECK (status IN ('ok', 'error', 'skipped')),
  error TEXT,
  started_at TEXT,
  finished_at TEXT NOT NULL
);
CREATE INDEX schedule_runs_schedule ON schedule_runs (schedule_id, at);
CREATE TABLE webhook_receipts (
  name TEXT NOT NULL,
  delivery_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (name, delivery_id)
);
CREATE TABLE webhook_deliveries (
  pos BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
  id TEXT PRIMARY KEY,
  url TEXT NOT NULL,
  secret_env TEXT NOT NULL,
  type TEXT NOT NULL,
  session_id TEXT NOT NULL,
  body TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL,
  last_status INTEGER,
  last_error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  delivered_at TEXT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
`;

/** Checkpoints of turns, as the SQLite store's step 5 (a file's chunks in file_chunks, each chunk once in chunks). */
const CHECKPOINTS = `
CREATE TABLE checkpoints (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  message_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('turn', 'revert')),
  reverted BOOLEAN NOT NULL DEFAULT false,
  data TEXT,
  created_at TEXT NOT NULL,
  pos BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX checkpoints_session ON checkpoints (session_id, pos);
CREATE TABLE checkpoint_files (
  checkpoint_id TEXT NOT NULL REFERENCES checkpoints (id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  change TEXT NOT NULL CHECK (change IN ('added', 'modified', 'deleted')),
  before_hash TEXT,
  before_mode INTEGER,
  PRIMARY KEY (checkpoint_id, path)
);
CREATE INDEX checkpoint_files_hash ON checkpoint_files (before_hash);
CREATE TABLE file_chunks (
  file_hash TEXT NOT NULL,
  pos INTEGER NOT NULL,
  chunk_hash TEXT NOT NULL,
  PRIMARY KEY (file_hash, pos)
);
CREATE INDEX file_chunks_chunk ON file_chunks (chunk_hash);
CREATE TABLE chunks (
  hash TEXT PRIMARY KEY,
  data BYTEA NOT NULL
);
ALTER TABLE messages ADD COLUMN reverted BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE sessions ADD COLUMN forked_from TEXT;
`;

/** A schedule belongs to the key that made it (null: the server secret), as a session does. */
const SCHEDULE_OWNERS = `
ALTER TABLE schedules ADD COLUMN owner_key TEXT;
CREATE INDEX schedules_owner ON schedules (owner_key);
`;

/** Ordered, append-only; versions 1 and 2 match the SQLite store's steps. */
export const PG_MIGRATIONS: readonly PgMigration[] = [
  { version: 1, name: "initial schema", up: INITIAL_SCHEMA },
  { version: 2, name: "event log, cost, compaction flags", up: EVENT_LOG },
  { version: 3, name: "cluster: leases, wake-up claims, remote methods", up: CLUSTER },
  { version: 4, name: "cluster: the lease fence inside single-statement writes", up: FENCE_FUNCTION },
  { version: 5, name: "session titles, origin, ephemeral", up: SESSION_TITLES },
  { version: 6, name: "schedules and webhooks", up: AUTOMATION },
  { version: 7, name: "checkpoints, reverted rows, forks", up: CHECKPOINTS },
  { version: 8, name: "access: api keys, session owners, request counters and audit", up: PG_ACCESS_SCHEMA },
  { version: 9, name: "schedule owners", up: SCHEDULE_OWNERS },
];

/** Two ints naming Veil's migration lock among any other advisory locks of the database. */
const MIGRATION_LOCK = [0x7665696c, 1] as const;

/**
 * Brings the database to the latest version in one transaction that first takes a
 * transaction-scoped advisory lock: when several nodes start at once, one migrates and the
 * others wait, then find nothing left to do. Returns the versions this call applied.
 */
export async function applyPgMigrations(client: pg.PoolClient, nowIso: string, migrations: readonly PgMigration[] = PG_MIGRATIONS): Promise<number[]> {
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock($1, $2)", [...MIGRATION_LOCK]);
    await client.query(MIGRATIONS_TABLE);
    const done = await runMigrations(
      {
        applied: async () => (await client.query<{ version: number }>("SELECT version FROM schema_migrations")).rows.map((r) => r.version),
        run: async (up) => void (await client.query(up)),
        record: async (version, name, at) => void (await client.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [version, name, at])),
      },
      migrations,
      nowIso,
    );
    await client.query("COMMIT");
    return done;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}

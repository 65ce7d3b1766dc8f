import type Database from "better-sqlite3";
import { ACCESS_SCHEMA } from "./access-tables.js";
import { MIGRATIONS_TABLE, runMigrations, type Migration as StoreMigration } from "../migrations.js";

/** A SQLite step: an SQL script, or a function for steps that need logic (data back-fills). */
export type Migration = StoreMigration<string | ((db: Database.Database) => void)>;

/*
 * Conventions: timestamps are ISO-8601 TEXT, JSON values are TEXT, booleans are 0/1.
 * Only the core tables (messages, tool_calls, inbox) reference sessions; the per-session
 * side tables (read markers, todos, wake-ups, meta) are keyed by session id without a
 * foreign key so tools can keep facts for a session another store owns.
 */
const INITIAL_SCHEMA = `
CREATE TABLE sessions (
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
  prompt_tokens INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  total_tokens INTEGER NOT NULL DEFAULT 0,
  cached_tokens INTEGER NOT NULL DEFAULT 0,
  cache_creation_tokens INTEGER NOT NULL DEFAULT 0,
  reasoning_tokens INTEGER NOT NULL DEFAULT 0,
  context_size INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX sessions_parent ON sessions (parent_session_id);
CREATE INDEX sessions_status ON sessions (status);
-- agent_spawn: an instance_name is unique under its parent (reusing one is a VALIDATION_ERROR).
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
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  content TEXT NOT NULL,
  meta TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX inbox_session ON inbox (session_id);

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
  interval_ms INTEGER NOT NULL,
  message TEXT NOT NULL,
  loop INTEGER NOT NULL,
  next_fire_at INTEGER NOT NULL,
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
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT,
  kind TEXT NOT NULL,
  data TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX audit_session ON audit (session_id);
CREATE INDEX audit_kind ON audit (kind);
`;

/** The durable event log; gseq is the rowid, so it only grows. */
const EVENT_LOG = `
CREATE TABLE events (
  gseq INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  ts INTEGER NOT NULL,
  data TEXT NOT NULL,
  UNIQUE (session_id, seq)
);
ALTER TABLE sessions ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN kind TEXT;
ALTER TABLE messages ADD COLUMN compacted INTEGER NOT NULL DEFAULT 0;
`;

/** Titles, where a session came from, and whether it closes once idle (one-shot callers). */
const SESSION_TITLES = `
ALTER TABLE sessions ADD COLUMN title TEXT;
ALTER TABLE sessions ADD COLUMN origin TEXT NOT NULL DEFAULT 'api';
ALTER TABLE sessions ADD COLUMN ephemeral INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_activity ON sessions (updated_at);
`;

/**
 * Schedules, their runs, inbound webhook receipts and outbound deliveries. Due times are
 * epoch ms (INTEGER) because claims compare them exactly.
 */
const AUTOMATION = `
CREATE TABLE schedules (
  id TEXT PRIMARY KEY,
  agent TEXT NOT NULL,
  prompt TEXT NOT NULL,
  cron TEXT,
  every_seconds REAL,
  session TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  next_run_at INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  active_at INTEGER,
  active_session_id TEXT,
  active_node TEXT,
  active_seen_at INTEGER
);
CREATE TABLE schedule_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  schedule_id TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
  at INTEGER NOT NULL,
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
  id TEXT PRIMARY KEY,
  url TEXT NOT NULL,
  secret_env TEXT NOT NULL,
  type TEXT NOT NULL,
  session_id TEXT NOT NULL,
  body TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_status INTEGER,
  last_error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  delivered_at TEXT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
`;

/**
 * Checkpoints of turns (store/checkpoints.ts): a file's content is the list of its chunks
 * (file_chunks), each chunk stored once by its hash (chunks); rows flagged reverted stay.
 */
const CHECKPOINTS = `
CREATE TABLE checkpoints (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  message_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('turn', 'revert')),
  reverted INTEGER NOT NULL DEFAULT 0,
  data TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX checkpoints_session ON checkpoints (session_id);
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
  data BLOB NOT NULL
);
ALTER TABLE messages ADD COLUMN reverted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN forked_from TEXT;
`;

/** A schedule belongs to the key that made it (null: the server secret), as a session does. */
const SCHEDULE_OWNERS = `
ALTER TABLE schedules ADD COLUMN owner_key TEXT;
CREATE INDEX schedules_owner ON schedules (owner_key);
`;

/** Ordered, append-only. */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "initial schema", up: INITIAL_SCHEMA },
  { version: 2, name: "event log, cost, compaction flags", up: EVENT_LOG },
  { version: 3, name: "session titles, origin, ephemeral", up: SESSION_TITLES },
  { version: 4, name: "schedules and webhooks", up: AUTOMATION },
  { version: 5, name: "checkpoints, reverted rows, forks", up: CHECKPOINTS },
  { version: 6, name: "access: api keys, session owners, request counters and audit", up: ACCESS_SCHEMA },
  { version: 7, name: "schedule owners", up: SCHEDULE_OWNERS },
];

/**
 * Brings the database up to the latest version inside one IMMEDIATE transaction, so two
 * processes opening the same file at once apply each step exactly once. Returns the
 * versions it applied (empty when the database was already current).
 */
export function applyMigrations(db: Database.Database, nowIso: string, migrations: readonly Migration[] = MIGRATIONS): number[] {
  db.exec(MIGRATIONS_TABLE);
  const record = db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
  const run = db.transaction(
    () =>
      runMigrations(
        {
          applied: () => (db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map((r) => r.version),
          run: (up) => (typeof up === "string" ? void db.exec(up) : up(db)),
          record: (version, name, at) => void record.run(version, name, at),
        },
        migrations,
        nowIso,
      ) as number[],
  );
  return run.immediate();
}

/** The access schema and statements of the PostgreSQL store (see AccessStore); merged into SQL (sql.ts). */

/*
 * Mirrors the SQLite access step. The audit's seq comes from a one-row counter (as the
 * event log's gseq does): its row lock is held until the insert commits, so entries commit
 * in seq order and a reader paging by "seq > last" never skips a late one.
 */
export const PG_ACCESS_SCHEMA = `
ALTER TABLE sessions ADD COLUMN owner_key TEXT;
CREATE INDEX sessions_owner ON sessions (owner_key, pos);
CREATE TABLE api_keys (
  pos BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  scopes TEXT NOT NULL,
  agents TEXT,
  requests_per_minute INTEGER,
  budget_usd DOUBLE PRECISION,
  expires_at TEXT,
  created_at TEXT NOT NULL,
  revoked_at TEXT
);
CREATE TABLE key_requests (
  key_id TEXT NOT NULL,
  window_start BIGINT NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (key_id, window_start)
);
CREATE TABLE audit_counter (
  id BOOLEAN PRIMARY KEY DEFAULT true CHECK (id),
  last_seq BIGINT NOT NULL
);
INSERT INTO audit_counter (id, last_seq) VALUES (true, 0);
CREATE TABLE request_audit (
  seq BIGINT PRIMARY KEY,
  at TEXT NOT NULL,
  key_id TEXT NOT NULL,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  status INTEGER NOT NULL,
  session_id TEXT
);
`;

const KEY_COLUMNS = "id, name, hash, prefix, scopes, agents, requests_per_minute, budget_usd, expires_at, created_at, revoked_at";

export const ACCESS_SQL = {
  insertKey: `INSERT INTO api_keys (id, name, hash, prefix, scopes, agents, requests_per_minute, budget_usd, expires_at, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${KEY_COLUMNS}`,
  getKey: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1`,
  findKeyByHash: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE hash = $1`,
  listKeys: `SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY pos`,
  revokeKey: `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 RETURNING ${KEY_COLUMNS}`,
  spendByKey: "SELECT owner_key AS key_id, SUM(cost_usd) AS spent FROM sessions WHERE owner_key IS NOT NULL GROUP BY owner_key",
  spendOfKey: "SELECT owner_key AS key_id, SUM(cost_usd) AS spent FROM sessions WHERE owner_key = $1 GROUP BY owner_key",
  countRequest: `INSERT INTO key_requests (key_id, window_start, count) VALUES ($1, $2, 1)
    ON CONFLICT (key_id, window_start) DO UPDATE SET count = key_requests.count + 1 RETURNING count`,
  dropOldWindows: "DELETE FROM key_requests WHERE key_id = $1 AND window_start < $2",
  addRequestAudit: `WITH next AS (UPDATE audit_counter SET last_seq = last_seq + 1 RETURNING last_seq)
    INSERT INTO request_audit (seq, at, key_id, method, path, status, session_id)
    SELECT last_seq, $1, $2, $3, $4, $5, $6 FROM next
    RETURNING seq, at, key_id, method, path, status, session_id`,
  listRequestAudit: "SELECT seq, at, key_id, method, path, status, session_id FROM request_audit WHERE seq > $1 ORDER BY seq LIMIT $2",
} as const;

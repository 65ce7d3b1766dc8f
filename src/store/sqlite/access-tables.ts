import type Database from "better-sqlite3";
import { lazyStatements } from "./statements.js";
import type { Clock } from "../../base/clock.js";
import { apiKeyFromRaw, auditPage, requestAuditFromRaw, type RawApiKey, type RawRequestAudit } from "../access-rows.js";
import type { AccessStore, ApiKeyRow, NewApiKey, RequestAuditRow } from "../store.js";
import { SqliteCheckpointTables } from "./sqlite-checkpoints.js";

/** The access schema: a session's owner key, the keys (hashes only), request counters and the request audit. */
export const ACCESS_SCHEMA = `
ALTER TABLE sessions ADD COLUMN owner_key TEXT;
CREATE INDEX sessions_owner ON sessions (owner_key);
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  scopes TEXT NOT NULL,
  agents TEXT,
  requests_per_minute INTEGER,
  budget_usd REAL,
  expires_at TEXT,
  created_at TEXT NOT NULL,
  revoked_at TEXT
);
CREATE TABLE key_requests (
  key_id TEXT NOT NULL,
  window_start INTEGER NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (key_id, window_start)
);
CREATE TABLE request_audit (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  at TEXT NOT NULL,
  key_id TEXT NOT NULL,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  status INTEGER NOT NULL,
  session_id TEXT
);
`;

const SQL = {
  insertKey: `INSERT INTO api_keys (id, name, hash, prefix, scopes, agents, requests_per_minute, budget_usd, expires_at, created_at)
    VALUES (@id, @name, @hash, @prefix, @scopes, @agents, @requests_per_minute, @budget_usd, @expires_at, @created_at) RETURNING *`,
  getKey: "SELECT * FROM api_keys WHERE id = ?",
  findKeyByHash: "SELECT * FROM api_keys WHERE hash = ?",
  listKeys: "SELECT * FROM api_keys ORDER BY rowid",
  revokeKey: "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? RETURNING *",
  spendByKey: "SELECT owner_key AS key_id, SUM(cost_usd) AS spent FROM sessions WHERE owner_key IS NOT NULL GROUP BY owner_key",
  spendOfKey: "SELECT owner_key AS key_id, SUM(cost_usd) AS spent FROM sessions WHERE owner_key = ? GROUP BY owner_key",
  countRequest: `INSERT INTO key_requests (key_id, window_start, count) VALUES (?, ?, 1)
    ON CONFLICT (key_id, window_start) DO UPDATE SET count = count + 1 RETURNING count`,
  dropOldWindows: "DELETE FROM key_requests WHERE key_id = ? AND window_start < ?",
  addRequestAudit: `INSERT INTO request_audit (at, key_id, method, path, status, session_id)
    VALUES (@at, @key_id, @method, @path, @status, @session_id) RETURNING *`,
  listRequestAudit: "SELECT * FROM request_audit WHERE seq > ? ORDER BY seq LIMIT ?",
};

/** SqliteStore's access tables (see AccessStore). */
export abstract class SqliteAccessTables extends SqliteCheckpointTables implements AccessStore {
  private readonly access: { readonly [K in keyof typeof SQL]: Database.Statement };
  private readonly countTx: (keyId: string, windowStart: number) => number;

  protected constructor(db: Database.Database, clock: Clock) {
    super(db, clock);
    this.access = lazyStatements(db, SQL);
    const count = db.transaction((keyId: string, windowStart: number) => {
      const { count: n } = this.access.countRequest.get(keyId, windowStart) as { count: number };
      if (n === 1) this.access.dropOldWindows.run(keyId, windowStart);
      return n;
    });
    this.countTx = (keyId, windowStart) => count.immediate(keyId, windowStart);
  }

  async createKey(key: NewApiKey): Promise<ApiKeyRow> {
    this.assertOpen();
    const raw = this.access.insertKey.get({
      ...key,
      scopes: JSON.stringify(key.scopes),
      agents: key.agents === null ? null : JSON.stringify(key.agents),
      created_at: this.nowIso(),
    }) as RawApiKey;
    return apiKeyFromRaw(raw);
  }

  async getKey(id: string): Promise<ApiKeyRow | undefined> {
    this.assertOpen();
    const raw = this.access.getKey.get(id) as RawApiKey | undefined;
    return raw && apiKeyFromRaw(raw);
  }

  async findKeyByHash(hash: string): Promise<ApiKeyRow | undefined> {
    this.assertOpen();
    const raw = this.access.findKeyByHash.get(hash) as RawApiKey | undefined;
    return raw && apiKeyFromRaw(raw);
  }

  async listKeys(): Promise<ApiKeyRow[]> {
    this.assertOpen();
    return (this.access.listKeys.all() as RawApiKey[]).map(apiKeyFromRaw);
  }

  async revokeKey(id: string): Promise<ApiKeyRow | undefined> {
    this.assertOpen();
    const raw = this.access.revokeKey.get(this.nowIso(), id) as RawApiKey | undefined;
    return raw && apiKeyFromRaw(raw);
  }

  async spendByKey(keyId?: string): Promise<Record<string, number>> {
    this.assertOpen();
    const rows = (keyId === undefined ? this.access.spendByKey.all() : this.access.spendOfKey.all(keyId)) as { key_id: string; spent: number }[];
    return Object.fromEntries(rows.map((r) => [r.key_id, r.spent]));
  }

  async countKeyRequest(keyId: string, windowStart: number): Promise<number> {
    this.assertOpen();
    return this.countTx(keyId, windowStart);
  }

  async addRequestAudit(row: Omit<RequestAuditRow, "seq">): Promise<RequestAuditRow> {
    this.assertOpen();
    return requestAuditFromRaw(this.access.addRequestAudit.get(row) as RawRequestAudit);
  }

  async listRequestAudit(options: { after?: number; limit?: number } = {}): Promise<RequestAuditRow[]> {
    this.assertOpen();
    const { after, limit } = auditPage(options);
    return (this.access.listRequestAudit.all(after, limit) as RawRequestAudit[]).map(requestAuditFromRaw);
  }
}

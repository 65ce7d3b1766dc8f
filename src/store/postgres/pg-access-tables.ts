import { apiKeyFromRaw, auditPage, requestAuditFromRaw, type RawApiKey, type RawRequestAudit } from "../access-rows.js";
import type { AccessStore, ApiKeyRow, NewApiKey, RequestAuditRow } from "../store.js";
import { PgCheckpointTables } from "./pg-checkpoints.js";

/** PgStore's access tables (see AccessStore); none of them is a session's, so none is fenced. */
export abstract class PgAccessTables extends PgCheckpointTables implements AccessStore {
  async createKey(key: NewApiKey): Promise<ApiKeyRow> {
    const { rows } = await this.direct("create key", undefined, (on) =>
      on.run<RawApiKey>("insertKey", [
        key.id,
        key.name,
        key.hash,
        key.prefix,
        JSON.stringify(key.scopes),
        key.agents === null ? null : JSON.stringify(key.agents),
        key.requests_per_minute,
        key.budget_usd,
        key.expires_at,
        this.nowIso(),
      ]),
    );
    return apiKeyFromRaw(rows[0]!);
  }

  async getKey(id: string): Promise<ApiKeyRow | undefined> {
    const { rows } = await this.direct("get key", undefined, (on) => on.run<RawApiKey>("getKey", [id]));
    return rows[0] && apiKeyFromRaw(rows[0]);
  }

  async findKeyByHash(hash: string): Promise<ApiKeyRow | undefined> {
    const { rows } = await this.direct("find key", undefined, (on) => on.run<RawApiKey>("findKeyByHash", [hash]));
    return rows[0] && apiKeyFromRaw(rows[0]);
  }

  async listKeys(): Promise<ApiKeyRow[]> {
    const { rows } = await this.direct("list keys", undefined, (on) => on.run<RawApiKey>("listKeys", []));
    return rows.map(apiKeyFromRaw);
  }

  async revokeKey(id: string): Promise<ApiKeyRow | undefined> {
    const { rows } = await this.direct("revoke key", undefined, (on) => on.run<RawApiKey>("revokeKey", [id, this.nowIso()]));
    return rows[0] && apiKeyFromRaw(rows[0]);
  }

  async spendByKey(keyId?: string): Promise<Record<string, number>> {
    const { rows } = await this.direct("key spend", undefined, (on) =>
      keyId === undefined ? on.run<{ key_id: string; spent: number }>("spendByKey", []) : on.run<{ key_id: string; spent: number }>("spendOfKey", [keyId]),
    );
    return Object.fromEntries(rows.map((r) => [r.key_id, Number(r.spent)]));
  }

  async countKeyRequest(keyId: string, windowStart: number): Promise<number> {
    const { rows } = await this.direct("count request", undefined, (on) => on.run<{ count: number }>("countRequest", [keyId, windowStart]));
    const count = Number(rows[0]!.count);
    // The first request of a window drops the key's older ones (one delete a minute at most).
    if (count === 1) await this.direct("drop request windows", undefined, (on) => on.run("dropOldWindows", [keyId, windowStart]));
    return count;
  }

  async addRequestAudit(row: Omit<RequestAuditRow, "seq">): Promise<RequestAuditRow> {
    const { rows } = await this.direct("add request audit", row.session_id ?? undefined, (on) =>
      on.run<RawRequestAudit>("addRequestAudit", [row.at, row.key_id, row.method, row.path, row.status, row.session_id]),
    );
    return requestAuditFromRaw(rows[0]!);
  }

  async listRequestAudit(options: { after?: number; limit?: number } = {}): Promise<RequestAuditRow[]> {
    const { after, limit } = auditPage(options);
    const { rows } = await this.direct("list request audit", undefined, (on) => on.run<RawRequestAudit>("listRequestAudit", [after, limit]));
    return rows.map(requestAuditFromRaw);
  }
}

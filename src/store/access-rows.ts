import type { ApiKeyRow, KeyScope, RequestAuditRow } from "./store.js";

/** The api_keys columns as both drivers return them (JSON lists kept as TEXT). */
export interface RawApiKey extends Omit<ApiKeyRow, "scopes" | "agents" | "budget_usd" | "requests_per_minute"> {
  scopes: string;
  agents: string | null;
  requests_per_minute: number | string | null;
  budget_usd: number | string | null;
}

export interface RawRequestAudit extends Omit<RequestAuditRow, "seq" | "status"> {
  seq: number | string;
  status: number | string;
}

const numberOrNull = (value: number | string | null): number | null => (value === null ? null : Number(value));

export function apiKeyFromRaw(raw: RawApiKey): ApiKeyRow {
  return {
    id: raw.id,
    name: raw.name,
    hash: raw.hash,
    prefix: raw.prefix,
    scopes: JSON.parse(raw.scopes) as KeyScope[],
    agents: raw.agents === null ? null : (JSON.parse(raw.agents) as string[]),
    requests_per_minute: numberOrNull(raw.requests_per_minute),
    budget_usd: numberOrNull(raw.budget_usd),
    expires_at: raw.expires_at,
    created_at: raw.created_at,
    revoked_at: raw.revoked_at,
  };
}

export function requestAuditFromRaw(raw: RawRequestAudit): RequestAuditRow {
  return { seq: Number(raw.seq), at: raw.at, key_id: raw.key_id, method: raw.method, path: raw.path, status: Number(raw.status), session_id: raw.session_id };
}

/** A page size the audit listing answers at most. */
export const MAX_AUDIT_PAGE = 1000;

export function auditPage(options: { after?: number; limit?: number }): { after: number; limit: number } {
  return { after: Math.max(0, Math.floor(options.after ?? 0)), limit: Math.min(MAX_AUDIT_PAGE, Math.max(0, Math.floor(options.limit ?? 100))) };
}

import type { ApiKeyRow, KeyScope } from "../../store/store.js";

export const SCOPES: readonly KeyScope[] = ["read", "chat", "admin"];

/**
 * Who a request acts as: the server secret (the admin, id "admin") or one API key. An
 * admin-scoped principal sees every session; any other sees only those its key owns.
 */
export interface Principal {
  /** The key id, or "admin" for the server secret. */
  id: string;
  scopes: ReadonlySet<KeyScope>;
  /** Agents it may start; null: any. */
  agents: readonly string[] | null;
  /** The key row (null for the server secret). */
  key: ApiKeyRow | null;
}

export const ADMIN_ID = "admin";

export const SECRET_PRINCIPAL: Principal = { id: ADMIN_ID, scopes: new Set(SCOPES), agents: null, key: null };

/** `chat` includes `read`, `admin` includes everything. */
export function hasScope(principal: Principal, scope: KeyScope): boolean {
  if (principal.scopes.has("admin")) return true;
  if (scope === "read") return principal.scopes.has("read") || principal.scopes.has("chat");
  return principal.scopes.has(scope);
}

export function isAdmin(principal: Principal): boolean {
  return principal.scopes.has("admin");
}

/** The key whose sessions a principal is limited to; undefined for an admin (every session). */
export function ownerScope(principal: Principal): string | undefined {
  return isAdmin(principal) ? undefined : principal.id;
}

/** The owner a session created by this principal gets (null for the server secret). */
export function ownerFor(principal: Principal): string | null {
  return principal.key ? principal.id : null;
}

export function principalOfKey(key: ApiKeyRow): Principal {
  return { id: key.id, scopes: new Set(key.scopes), agents: key.agents, key };
}

export function mayStartAgent(principal: Principal, agent: string): boolean {
  return principal.agents === null || principal.agents.includes(agent);
}

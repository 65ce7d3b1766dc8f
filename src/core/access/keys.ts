import { createHash, randomBytes } from "node:crypto";
import type { Clock } from "../../base/clock.js";
import type { IdGenerator } from "../../base/ids.js";
import { VeilError } from "../../errors.js";
import type { AccessStore, ApiKeyRow, KeyScope } from "../../store/store.js";
import { KeyWatch } from "./key-watch.js";
import { hasScope, principalOfKey, SCOPES, type Principal } from "./principal.js";

/** Every key's value starts with this, so a leaked one is easy to recognise (and to scan for). */
export const KEY_PREFIX = "veil_sk_";
/** How long a node trusts a key row it read (revocation reaches every node within this). */
export const KEY_CACHE_MS = 1000;
/** Rate-limit windows are whole minutes. */
export const RATE_WINDOW_MS = 60_000;
/** Rows (and misses) a node caches at most before it starts over. */
const MAX_CACHED = 10_000;

export interface KeyInput {
  name: string;
  scopes: KeyScope[];
  agents?: string[];
  requestsPerMinute?: number;
  budgetUsd?: number;
  expiresAt?: string;
}

export interface KeyServiceDeps {
  store: AccessStore;
  clock: Clock;
  ids: IdGenerator;
  cacheMs?: number;
}

interface Cached {
  row: ApiKeyRow | undefined;
  readAt: number;
}

/** The SHA-256 of a key's value: all the store keeps of it. */
export function keyHash(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

/**
 * API keys: created by the admin, shown once, stored as a hash. Lookups are a hash and a
 * cached row; the cache holds a row for at most a second, so a key revoked on one node
 * stops working on every node within that (the store is the truth). Rate windows and spend
 * are read from the store itself, which every node shares.
 */
export class KeyService {
  private readonly byHash = new Map<string, Cached>();
  private readonly byId = new Map<string, Cached>();
  private readonly cacheMs: number;
  private readonly streams: KeyWatch;

  constructor(private readonly deps: KeyServiceDeps) {
    this.cacheMs = deps.cacheMs ?? KEY_CACHE_MS;
    this.streams = new KeyWatch({ clock: deps.clock, intervalMs: this.cacheMs, stillValid: async (id) => hasStreamScope(await this.principalOf(id)) });
  }

  async create(input: KeyInput): Promise<{ row: ApiKeyRow; key: string }> {
    checkInput(input, this.deps.clock.now());
    const key = `${KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
    const row = await this.deps.store.createKey({
      id: this.deps.ids.next("key"),
      name: input.name,
      hash: keyHash(key),
      prefix: key.slice(0, KEY_PREFIX.length + 4),
      scopes: [...new Set(input.scopes)],
      agents: input.agents ? [...new Set(input.agents)] : null,
      requests_per_minute: input.requestsPerMinute ?? null,
      budget_usd: input.budgetUsd ?? null,
      expires_at: input.expiresAt ? new Date(input.expiresAt).toISOString() : null,
    });
    return { row, key };
  }

  /** Every key with what its sessions cost so far. */
  async list(): Promise<{ row: ApiKeyRow; spentUsd: number }[]> {
    const [rows, spend] = await Promise.all([this.deps.store.listKeys(), this.deps.store.spendByKey()]);
    return rows.map((row) => ({ row, spentUsd: spend[row.id] ?? 0 }));
  }

  async get(id: string): Promise<{ row: ApiKeyRow; spentUsd: number }> {
    const row = await this.deps.store.getKey(id);
    if (!row) throw new VeilError("KEY_NOT_FOUND", `no key "${id}"`);
    return { row, spentUsd: await this.spent(id) };
  }

  /** Revokes at once here; other nodes drop their cached row within a second. */
  async revoke(id: string): Promise<ApiKeyRow> {
    const row = await this.deps.store.revokeKey(id);
    if (!row) throw new VeilError("KEY_NOT_FOUND", `no key "${id}"`);
    this.byHash.delete(row.hash);
    this.byId.delete(row.id);
    this.streams.lost(row.id);
    return row;
  }

  /**
   * Calls `lost` once the principal's key stops working for a stream: revoked (here at once,
   * on another node within two cache periods), expired, or without the `read` scope. The
   * server secret never stops. Returns a function that stops watching.
   */
  watchStream(principal: Principal, lost: () => void): () => void {
    if (!principal.key) return () => {};
    return this.streams.watch(principal.id, lost);
  }

  /** Keys with a stream open on this node. */
  get watchedKeys(): number {
    return this.streams.size;
  }

  /** The principal of a presented key value; undefined when it is unknown, revoked or expired. */
  async authenticate(value: string): Promise<Principal | undefined> {
    if (!value.startsWith(KEY_PREFIX) || value.length > 200) return undefined;
    const hash = keyHash(value);
    return this.usable(await this.cached(this.byHash, hash, () => this.deps.store.findKeyByHash(hash)));
  }

  /** The principal of a key by id (a stream token names the key that minted it). */
  async principalOf(id: string): Promise<Principal | undefined> {
    return this.usable(await this.cached(this.byId, id, () => this.deps.store.getKey(id)));
  }

  /** What the key's sessions cost so far, read from the store. */
  async spent(keyId: string): Promise<number> {
    return (await this.deps.store.spendByKey(keyId))[keyId] ?? 0;
  }

  /** True once the key's sessions cost its budget or more. */
  async overBudget(principal: Principal): Promise<boolean> {
    const budget = principal.key?.budget_usd;
    if (budget === null || budget === undefined) return false;
    return (await this.spent(principal.id)) >= budget;
  }

  /** Counts one request; the seconds to wait when the key is past its requestsPerMinute, else null. */
  async countRequest(principal: Principal): Promise<number | null> {
    const limit = principal.key?.requests_per_minute;
    if (limit === null || limit === undefined) return null;
    const now = this.deps.clock.now();
    const windowStart = now - (now % RATE_WINDOW_MS);
    const count = await this.deps.store.countKeyRequest(principal.id, windowStart);
    if (count <= limit) return null;
    return Math.max(1, Math.ceil((windowStart + RATE_WINDOW_MS - now) / 1000));
  }

  private usable(row: ApiKeyRow | undefined): Principal | undefined {
    if (!row || row.revoked_at !== null) return undefined;
    if (row.expires_at !== null && Date.parse(row.expires_at) <= this.deps.clock.now()) return undefined;
    return principalOfKey(row);
  }

  private async cached(cache: Map<string, Cached>, key: string, read: () => Promise<ApiKeyRow | undefined>): Promise<ApiKeyRow | undefined> {
    const now = this.deps.clock.monotonic();
    const hit = cache.get(key);
    if (hit && now - hit.readAt < this.cacheMs) return hit.row;
    const row = await read();
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(key, { row, readAt: now });
    return row;
  }
}

const hasStreamScope = (principal: Principal | undefined) => principal !== undefined && hasScope(principal, "read");

/** A key as the API and the CLI show it: never its value (only its first characters, `prefix`). */
export function keyView(row: ApiKeyRow, spentUsd: number) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: row.scopes,
    agents: row.agents,
    requestsPerMinute: row.requests_per_minute,
    budgetUsd: row.budget_usd,
    spentUsd,
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  };
}

function checkInput(input: KeyInput, now: number): void {
  const bad = (message: string) => new VeilError("VALIDATION_ERROR", message);
  if (typeof input.name !== "string" || input.name.trim() === "") throw bad("name: a non-empty string");
  if (!Array.isArray(input.scopes) || input.scopes.length === 0 || input.scopes.some((s) => !SCOPES.includes(s))) {
    throw bad(`scopes: a non-empty list of ${SCOPES.map((s) => `"${s}"`).join(", ")}`);
  }
  if (input.requestsPerMinute !== undefined && (!Number.isInteger(input.requestsPerMinute) || input.requestsPerMinute < 1)) throw bad("requestsPerMinute: a positive integer");
  if (input.budgetUsd !== undefined && (!Number.isFinite(input.budgetUsd) || input.budgetUsd < 0)) throw bad("budgetUsd: a number of dollars, 0 or more");
  if (input.expiresAt !== undefined) {
    const at = Date.parse(input.expiresAt);
    if (Number.isNaN(at)) throw bad(`expiresAt: an ISO time such as "2030-01-01T00:00:00Z" (got ${JSON.stringify(input.expiresAt)})`);
    if (at <= now) throw bad("expiresAt: a time in the future");
  }
}

import { createHash, randomBytes } from "node:crypto";
import { VeilError } from "../errors.js";
import type { Clock } from "../base/clock.js";

/** How long a minted token may be used to open a stream for the first time. */
export const STREAM_TOKEN_TTL_MS = 60_000;
/** How long a stream, once opened with a token, may reconnect with it (EventSource's own retries). */
export const STREAM_RECONNECT_MS = 24 * 60 * 60 * 1000;
/** Live tokens kept at most; the oldest go first. */
export const MAX_STREAM_TOKENS = 10_000;

/** Key under which the runtime keeps the service (runtime.services). */
export const STREAM_TOKENS_SERVICE = "streamTokens";

/** GET paths a stream token opens: the event streams and nothing else. */
const STREAM_PATHS = [/^\/events$/, /^\/sessions\/[^/]+\/events$/, /^\/remote-methods$/];

export interface MintedToken {
  token: string;
  /** ISO time after which the token no longer opens a stream. */
  expiresAt: string;
  /** The one path the token opens, when it was minted for one. */
  path?: string;
}

interface Entry {
  /** Deadline for opening a stream not opened before. */
  expiresAt: number;
  /** Who minted it ("admin" or a key id): the stream acts as that principal, who alone may revoke it. */
  owner: string;
  path?: string;
  /** Streams this token opened → until when they may reconnect with it. */
  opened: Map<string, number>;
}

/**
 * Short-lived tokens for browsers, whose EventSource cannot send an
 * Authorization header.
 *
 * Flow: the page calls `POST /stream-tokens` with `Authorization: Bearer <secret>`
 * (optionally `{ "path": "/remote-methods" }` to bind the token to one stream) and
 * gets `{ token, expiresAt }`; it then opens
 * `new EventSource("/remote-methods?token=" + token)`. A token is random (32 bytes),
 * opens only GET requests to the stream paths (`/events`, `/sessions/:id/events`,
 * `/remote-methods`), and is kept only as a SHA-256 hash. It opens streams for 60 s after
 * minting; a stream it opened may reconnect with it for 24 h after that first use, so an
 * EventSource's own reconnects (same URL, `Last-Event-ID` replay) keep working after the
 * minute. `DELETE /stream-tokens/:token` revokes one token, `DELETE /stream-tokens` all of
 * them (log-out); a restart (e.g. with a new secret) forgets every token. The long-lived
 * secret never appears in a URL; a bad, expired or revoked token gets 401.
 */
export class StreamTokens {
  private readonly tokens = new Map<string, Entry>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs = STREAM_TOKEN_TTL_MS,
    private readonly reconnectMs = STREAM_RECONNECT_MS,
  ) {}

  mint(path?: string, owner = "admin"): MintedToken {
    if (path !== undefined && !isStreamPath(path)) {
      throw new VeilError("VALIDATION_ERROR", `path "${path}" is not a stream; a token opens /events, /sessions/:id/events or /remote-methods`);
    }
    this.prune();
    while (this.tokens.size >= MAX_STREAM_TOKENS) {
      const oldest = this.tokens.keys().next().value as string;
      this.tokens.delete(oldest);
    }
    const token = randomBytes(32).toString("base64url");
    const expiresAt = this.clock.now() + this.ttlMs;
    this.tokens.set(hash(token), { expiresAt, owner, path, opened: new Map() });
    return { token, expiresAt: new Date(expiresAt).toISOString(), ...(path ? { path } : {}) };
  }

  /**
   * Who minted `token` when it opens `path` (a stream it opened before, within 24 h, or a
   * first opening within its minute); undefined when it does not.
   */
  opener(token: string, path: string): string | undefined {
    if (!token || token.length > 200 || !isStreamPath(path)) return undefined;
    const key = hash(token);
    const entry = this.tokens.get(key);
    if (!entry) return undefined;
    const now = this.clock.now();
    const reconnectUntil = entry.opened.get(path);
    if (reconnectUntil !== undefined && now < reconnectUntil) return entry.owner;
    if (entry.expiresAt <= now) {
      if (!isLive(entry, now)) this.tokens.delete(key);
      return undefined;
    }
    if (entry.path !== undefined && entry.path !== path) return undefined;
    entry.opened.set(path, now + this.reconnectMs);
    return entry.owner;
  }

  /** True when `token` opens `path` (see opener). */
  verify(token: string, path: string): boolean {
    return this.opener(token, path) !== undefined;
  }

  /** Revokes one token (only its minter's, unless `owner` is undefined: any); false when it was not live. */
  revoke(token: string, owner?: string): boolean {
    const key = hash(token);
    const entry = this.tokens.get(key);
    if (!entry || (owner !== undefined && entry.owner !== owner)) return false;
    return this.tokens.delete(key);
  }

  /** Revokes every token (log-out), or every token of one minter; returns how many were live. */
  revokeAll(owner?: string): number {
    this.prune();
    let count = 0;
    for (const [key, entry] of this.tokens) {
      if (owner !== undefined && entry.owner !== owner) continue;
      this.tokens.delete(key);
      count++;
    }
    return count;
  }

  /** Live tokens (diagnostics). */
  size(): number {
    this.prune();
    return this.tokens.size;
  }

  private prune(): void {
    const now = this.clock.now();
    for (const [key, entry] of this.tokens) if (!isLive(entry, now)) this.tokens.delete(key);
  }
}

/** A token is live while it may still open a new stream or reconnect one it opened. */
function isLive(entry: Entry, now: number): boolean {
  if (entry.expiresAt > now) return true;
  for (const until of entry.opened.values()) if (until > now) return true;
  return false;
}

export function isStreamPath(path: string): boolean {
  return STREAM_PATHS.some((pattern) => pattern.test(path));
}

function hash(token: string): string {
  return createHash("sha256").update(token).digest("base64url");
}

export function isStreamTokens(value: unknown): value is StreamTokens {
  return value instanceof StreamTokens;
}

import { createHash, randomBytes } from "node:crypto";
import { VeilError } from "../errors.js";
import type { Clock } from "../base/clock.js";

/** How long a minted token may be used to open a stream. */
export const STREAM_TOKEN_TTL_MS = 60_000;
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
  expiresAt: number;
  path?: string;
}

/**
 * Short-lived tokens for browsers, whose EventSource cannot send an
 * Authorization header.
 *
 * Flow: the page calls `POST /stream-tokens` with `Authorization: Bearer <secret>`
 * (optionally `{ "path": "/remote-methods" }` to bind the token to one stream) and
 * gets `{ token, expiresAt }`; it then opens
 * `new EventSource("/remote-methods?token=" + token)`. A token is random (32 bytes),
 * valid for 60 s, opens only GET requests to the stream paths (`/events`,
 * `/sessions/:id/events`, `/remote-methods`), and is kept only as a SHA-256 hash.
 * It may be reused within its minute (EventSource reconnects with the same URL);
 * after that the page mints a new one. The long-lived secret never appears in a
 * URL; a bad or expired token gets 401.
 */
export class StreamTokens {
  private readonly tokens = new Map<string, Entry>();

  constructor(private readonly clock: Clock, private readonly ttlMs = STREAM_TOKEN_TTL_MS) {}

  mint(path?: string): MintedToken {
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
    this.tokens.set(hash(token), { expiresAt, path });
    return { token, expiresAt: new Date(expiresAt).toISOString(), ...(path ? { path } : {}) };
  }

  /** True when `token` is live and opens `path`. */
  verify(token: string, path: string): boolean {
    if (!token || token.length > 200 || !isStreamPath(path)) return false;
    const key = hash(token);
    const entry = this.tokens.get(key);
    if (!entry) return false;
    if (entry.expiresAt <= this.clock.now()) {
      this.tokens.delete(key);
      return false;
    }
    return entry.path === undefined || entry.path === path;
  }

  /** Live tokens (diagnostics). */
  size(): number {
    this.prune();
    return this.tokens.size;
  }

  private prune(): void {
    const now = this.clock.now();
    for (const [key, entry] of this.tokens) if (entry.expiresAt <= now) this.tokens.delete(key);
  }
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

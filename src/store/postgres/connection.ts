import pg from "pg";
import type { Clock } from "../../base/clock.js";
import type { Logger } from "../../base/log.js";
import { VeilError } from "../../errors.js";
import { LEASE_LOST_SQLSTATE } from "./fenced-sql.js";

/** The URL with its password replaced by `***`, safe for logs and error messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    // Not a WHATWG URL (a libpq key=value string, or garbage): hide anything password-like.
    return url.replace(/(\/\/[^:/@]*:)[^@]*@/, "$1***@").replace(/(password\s*=\s*)\S+/gi, "$1***");
  }
}

/** Checks the URL's shape before any connection is tried: a typo fails at once, clearly. */
export function checkDatabaseUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new VeilError("CONFIG_ERROR", `Not a PostgreSQL URL: ${redactUrl(url)} (expected postgres://user:password@host:port/database)`);
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    throw new VeilError("CONFIG_ERROR", `Not a PostgreSQL URL: ${redactUrl(url)} (the scheme must be postgres:// or postgresql://)`);
  }
}

/** SQLSTATE classes and socket errors that mean "the server is not reachable right now". */
const UNAVAILABLE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EPIPE", "EAI_AGAIN", "57P01", "57P02", "57P03", "53300"]);
/** Answers that no retry can fix: wrong user, password, database or host name. */
const CONFIG_CODES = new Set(["28000", "28P01", "3D000", "ENOTFOUND"]);

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

function isConnectionLoss(error: unknown): boolean {
  const code = codeOf(error);
  if (code && (UNAVAILABLE_CODES.has(code) || code.startsWith("08"))) return true;
  const message = error instanceof Error ? error.message : "";
  return /Connection terminated|connection timeout|Client has encountered a connection error/i.test(message);
}

/** True when a retry later may succeed (the server is down or restarting). */
export function isTransient(error: unknown): boolean {
  return isConnectionLoss(error) && !CONFIG_CODES.has(codeOf(error) ?? "");
}

/**
 * Turns driver errors into catalogue errors. Constraint violations map to the Store's
 * codes; connection failures name the URL (password hidden). Anything else passes through.
 */
export function mapPgError(error: unknown, url: string, what: string, sessionId?: string): unknown {
  if (error instanceof VeilError) return error;
  const code = codeOf(error);
  const reason = error instanceof Error ? error.message : String(error);
  if (code === "23503") {
    return new VeilError("SESSION_NOT_FOUND", `Session not found${sessionId ? `: ${sessionId}` : ""} (${what})`, { cause: error });
  }
  if (code === LEASE_LOST_SQLSTATE) {
    const session = (error as { detail?: string }).detail ?? sessionId;
    return new VeilError("LEASE_LOST", `Session ${session} is no longer held by this node; the write (${what}) was refused: ${reason}`, { cause: error, details: { sessionId: session } });
  }
  if (code === "23505") return new VeilError("CONFLICT", `Already exists: ${what}`, { cause: error });
  if (code && CONFIG_CODES.has(code)) {
    return new VeilError("CONFIG_ERROR", `PostgreSQL at ${redactUrl(url)} refused the connection: ${reason}`, { cause: error });
  }
  if (isConnectionLoss(error)) {
    return new VeilError("STORE_UNAVAILABLE", `PostgreSQL at ${redactUrl(url)} is unavailable (${what}): ${reason}`, { cause: error });
  }
  return error;
}

export interface PoolOptions {
  url: string;
  /** Connections kept open at most. default: 10 */
  poolSize?: number;
  /** Time to wait for a new connection, ms. default: 5000 */
  connectTimeoutMs?: number;
  log?: Logger;
}

/** int8 (COUNT, BIGINT ids, epoch ms) as numbers: our values stay far below 2^53. */
const TYPES = {
  getTypeParser(oid: number, format?: string) {
    if (oid === 20) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as "text");
  },
};

export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    idleTimeoutMillis: 30_000,
    types: TYPES as pg.CustomTypesConfig,
    application_name: "veil",
  });
  // An idle client whose server went away emits here; unhandled, it would end the process.
  pool.on("error", (error) => options.log?.warn("PostgreSQL connection lost", { url: redactUrl(options.url), error: error.message }));
  return pool;
}

export interface RetryPolicy {
  /** Attempts in all, the first included. default: 6 */
  attempts: number;
  /** First wait, ms; doubles each time. default: 250 */
  baseDelayMs: number;
  /** Longest single wait, ms. default: 4000 */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 6, baseDelayMs: 250, maxDelayMs: 4000 };

/**
 * Checks a connection out of the pool, retrying with backoff while the server is
 * unreachable. Only the checkout is retried: nothing has been sent yet, so a retry can
 * never apply a write twice.
 */
export async function checkout(pool: pg.Pool, url: string, policy: RetryPolicy, clock: Clock, log?: Logger): Promise<pg.PoolClient> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await pool.connect();
    } catch (error) {
      if (!isTransient(error) || attempt >= policy.attempts) throw mapPgError(error, url, "connect");
      const delay = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
      log?.warn("PostgreSQL unreachable; retrying", { url: redactUrl(url), attempt, delayMs: delay, error: (error as Error).message });
      await clock.sleep(delay);
    }
  }
}

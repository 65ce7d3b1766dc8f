import type { Context, MiddlewareHandler } from "hono";
import { hasScope, isAdmin, mayStartAgent, ownerScope, SECRET_PRINCIPAL, type Principal } from "../core/access/principal.js";
import { KEY_PREFIX } from "../core/access/keys.js";
import { VeilError } from "../errors.js";
import type { KeyScope } from "../store/store.js";
import { bearerToken, tokenMatches } from "./auth.js";
import type { AppEnv, ServerState } from "./context.js";
import { apiError, errorResponse } from "./errors.js";

const READS = new Set(["GET", "HEAD", "OPTIONS"]);

/** What a `chat` key may do beyond reading: run and steer its own sessions. */
const CHAT_ROUTES: readonly [string, RegExp][] = [
  ["POST", /^\/sessions$/],
  ["POST", /^\/sessions\/close$/],
  ["DELETE", /^\/sessions$/],
  ["PATCH", /^\/sessions\/[^/]+$/],
  ["POST", /^\/sessions\/[^/]+\/(chat|cancel|suspend|resume|compact|revert|unrevert|fork)$/],
  ["DELETE", /^\/sessions\/[^/]+$/],
  ["POST", /^\/remote-methods\/[^/]+\/result$/],
  ["POST", /^\/(v1\/chat\/)?completions$/],
  // A schedule is chat at set times: a key's schedules run in sessions of its own.
  ["POST", /^\/schedules$/],
  ["PATCH", /^\/schedules\/[^/]+$/],
  ["DELETE", /^\/schedules\/[^/]+$/],
];
/** Writes any key may make: minting and revoking its own stream tokens (to read streams from a browser). */
const READ_ROUTES: readonly [string, RegExp][] = [
  ["POST", /^\/stream-tokens$/],
  ["DELETE", /^\/stream-tokens(\/[^/]+)?$/],
];

/** Reads that are the admin's alone: the keys and the audit trail. */
const ADMIN_READS = /^\/(keys(\/[^/]+)?|audit)$/;

/** The scope a request needs: every read needs `read` (but the keys' and the audit's); the chat routes `chat`; anything else `admin`. */
export function requiredScope(method: string, path: string): KeyScope {
  const matches = (routes: readonly [string, RegExp][]) => routes.some(([m, pattern]) => m === method && pattern.test(path));
  if (READS.has(method)) return ADMIN_READS.test(path) ? "admin" : "read";
  if (matches(READ_ROUTES)) return "read";
  return matches(CHAT_ROUTES) ? "chat" : "admin";
}

/** The session a request names in its path (`/sessions/:id…`) or as `?session=`. */
export function sessionOfRequest(path: string, query: (name: string) => string | undefined): string | undefined {
  // POST /sessions/close names its sessions in its body (the route keeps a key to its own).
  if (path === "/sessions/close") return undefined;

  const match = /^\/sessions\/([^/]+)/.exec(path);
  if (match) {
    try {
      return decodeURIComponent(match[1]!);
    } catch {
      // A malformed escape names no session; the route answers it.
      return match[1]!;
    }
  }
  return path === "/events" ? query("session") || undefined : undefined;
}

/**
 * Authentication, scopes, rate limits, ownership and the request audit, for every route but
 * the public ones. Who: the server secret (the admin), an API key (`veil_sk_…`), or (GET on a
 * stream) a stream token, which acts as whoever minted it. A key lacking the route's scope
 * gets 403; past its requestsPerMinute 429 with Retry-After; a session of another key 404,
 * exactly as a missing one. Every request that may change something is recorded once
 * answered (who, method, path, status, session).
 */
export function accessControl(state: ServerState, isPublic: (path: string, method: string) => boolean): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (isPublic(c.req.path, c.req.method)) return next();
    const principal = await authenticate(c, state);
    if (!principal) return apiError(c, "UNAUTHORIZED", "missing or wrong bearer token (Authorization: Bearer <secret or API key>)");
    c.set("principal", principal);
    if (READS.has(c.req.method)) return (await refusal(c, state, principal)) ?? next();
    let answer: Response | undefined;
    try {
      answer = await refusal(c, state, principal);
      if (!answer) await next();
    } finally {
      await recordRequest(c, state, principal, answer?.status ?? c.res.status);
    }
    return answer;
  };
}

async function authenticate(c: Context<AppEnv>, state: ServerState): Promise<Principal | undefined> {
  const presented = bearerToken(c.req.header("authorization"));
  c.set("authenticated", false);
  if (presented !== undefined) {
    const principal = tokenMatches(presented, state.secret)
      ? SECRET_PRINCIPAL
      : presented.startsWith(KEY_PREFIX)
        ? await state.runtime.keys.authenticate(presented)
        : undefined;
    if (principal) c.set("authenticated", true);
    return principal;
  }
  // Streams a browser opens with EventSource may carry a stream token instead (see core/stream-tokens.ts).
  if (c.req.method !== "GET") return undefined;
  const token = c.req.query("token");
  const opener = token ? state.runtime.streamTokens.opener(token, c.req.path) : undefined;
  if (opener === undefined) return undefined;
  return opener === SECRET_PRINCIPAL.id ? SECRET_PRINCIPAL : state.runtime.keys.principalOf(opener);
}

/** The answer that refuses the request (429, 403, 404), or undefined to go on. */
async function refusal(c: Context<AppEnv>, state: ServerState, principal: Principal): Promise<Response | undefined> {
  try {
    const wait = await state.runtime.keys.countRequest(principal);
    if (wait !== null) {
      c.header("retry-after", String(wait));
      return apiError(c, "RATE_LIMITED", `key "${principal.id}" is past its requestsPerMinute; retry in ${wait} s`);
    }
    const scope = requiredScope(c.req.method, c.req.path);
    if (!hasScope(principal, scope)) return apiError(c, "FORBIDDEN", `${c.req.method} ${c.req.path} needs the "${scope}" scope, which this key lacks`);
    const sessionId = sessionOfRequest(c.req.path, (name) => c.req.query(name));
    if (sessionId !== undefined) {
      c.set("auditSessionId", sessionId);
      await assertOwns(state, principal, sessionId);
    }
    return undefined;
  } catch (error) {
    return errorResponse(c, error, state.runtime.log);
  }
}

/** A session of another key is, to a non-admin key, a session that does not exist. */
export async function assertOwns(state: ServerState, principal: Principal, sessionId: string): Promise<void> {
  if (isAdmin(principal)) return;
  const owner = await state.runtime.owners.of(sessionId);
  if (owner !== undefined && owner !== principal.id) throw new VeilError("SESSION_NOT_FOUND", `no session "${sessionId}"`);
}

/** A test of "may this principal see that session's events" for the SSE fan-out; undefined: every session. */
export function sessionGate(state: ServerState, principal: Principal): ((sessionId: string) => boolean | Promise<boolean>) | undefined {
  const owner = ownerScope(principal);
  return owner === undefined ? undefined : state.runtime.owners.gate(owner);
}

/** Ends a stream opened by a key once that key stops working (revoked, expired, its read scope gone); undefined for the secret. */
export function streamEndsWithKey(state: ServerState, principal: Principal): ((end: (why: string) => void) => () => void) | undefined {
  if (!principal.key) return undefined;
  return (end) => state.runtime.keys.watchStream(principal, () => end(`closed: key "${principal.id}" was revoked, expired or lost the read scope`));
}

/** Before a new chat: 402 once the key's sessions cost its budget. */
export async function assertBudgetLeft(state: ServerState, principal: Principal): Promise<void> {
  if (!(await state.runtime.keys.overBudget(principal))) return;
  throw new VeilError("BUDGET_EXCEEDED", `key "${principal.id}" has spent its budget of $${principal.key?.budget_usd}`);
}

/** Before a new session: 403 for an agent outside the key's `agents`. */
export function assertMayStart(principal: Principal, agent: string): void {
  if (!mayStartAgent(principal, agent)) throw new VeilError("FORBIDDEN", `this key may not start agent "${agent}" (it may start: ${principal.agents?.join(", ")})`);
}

async function recordRequest(c: Context<AppEnv>, state: ServerState, principal: Principal, status: number): Promise<void> {
  const { runtime } = state;
  const sessionId = c.get("auditSessionId") ?? c.res.headers.get("x-veil-session") ?? null;
  try {
    await runtime.store.addRequestAudit({ at: new Date(runtime.clock.now()).toISOString(), key_id: principal.id, method: c.req.method, path: c.req.path, status, session_id: sessionId });
  } catch (error) {
    runtime.log.error("request audit write failed", { error: String(error), path: c.req.path });
  }
}

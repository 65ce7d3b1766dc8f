import { Type, type Static } from "../../schema.js";
import type { Context, Hono } from "hono";
import { VeilError } from "../../errors.js";
import type { PendingMethod, RemoteMethodService } from "../../core/remote-methods.js";
import type { StreamTokens } from "../../core/stream-tokens.js";
import { jsonBody } from "../body.js";
import type { AppEnv, ServerState } from "../context.js";
import { parseLastEventId, sseResponse } from "../sse.js";
import { sessionGate, streamEndsWithKey } from "../access.js";
import { isAdmin, type Principal } from "../../core/access/principal.js";

export const ResultBody = Type.Object({ result: Type.Optional(Type.Unknown()) });
export const MintBody = Type.Object({ path: Type.Optional(Type.String({ minLength: 1 })) }, { additionalProperties: false });

/**
 * The remote-method endpoints (custom tools' `_remoteMethodExecution`, README "Wake-ups and remote methods"):
 * - `GET /remote-methods` (SSE): every pending method first (`method.pending`), then live
 *   `method.pending` / `method.done` for all sessions.
 * - `POST /remote-methods/:id/result` `{ result }` → `200 { ok: true, id }`, or
 *   `409 { error: "not_found" }` when the id is unknown, already answered or timed out.
 * - `GET /remote-methods/pending` → `{ pending: [ids] }` (several nodes: the whole service's).
 */
/** The `method.pending` events a stream sends first, one per method pending when it opened. */
export function pendingMethodFrames(pending: PendingMethod[]): () => { data: unknown }[] {
  return () => pending.map(({ sessionId, ...method }) => ({ data: { type: "method.pending", ...method, sessionId } }));
}

/** The pending methods a principal may see: all of them for an admin, else those of its own sessions. */
export async function ownPendingMethods(state: ServerState, principal: Principal): Promise<PendingMethod[]> {
  const pending = await state.runtime.remoteMethods.listPending();
  if (isAdmin(principal)) return pending;
  const owners = await Promise.all(pending.map((method) => state.runtime.owners.of(method.sessionId)));
  return pending.filter((_, i) => owners[i] === principal.id);
}

export function remoteMethodRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const { runtime } = state;
  const service = (): RemoteMethodService => runtime.remoteMethods;

  app.get("/remote-methods", async (c) => {
    // Several nodes: the whole service's pending methods, read before the stream opens.
    const pending = await ownPendingMethods(state, c.get("principal"));
    const admit = sessionGate(state, c.get("principal"));
    const endWhen = streamEndsWithKey(state, c.get("principal"));
    return sseResponse({
      bus: runtime.bus,
      log: runtime.events,
      filter: { types: ["method.pending", "method.done"] },
      idField: "gseq",
      lastEventId: parseLastEventId(c.req.header("last-event-id"), c.req.query("lastEventId")),
      signal: c.req.raw.signal,
      heartbeatMs: state.heartbeatMs,
      initial: pendingMethodFrames(pending),
      ...(admit ? { admit } : {}),
      ...(endWhen ? { endWhen } : {}),
      clients: runtime.metrics,
    });
  });

  app.get("/remote-methods/pending", async (c) => c.json({ pending: (await ownPendingMethods(state, c.get("principal"))).map((method) => method.id) }));

  app.post("/remote-methods/:id/result", async (c) => {
    const id = c.req.param("id");
    const body = await jsonBody<Static<typeof ResultBody>>(c, ResultBody);
    const result = body.result === undefined ? null : body.result;
    // Another key's method is, to a non-admin key, one that does not exist.
    const principal = c.get("principal");
    if (!isAdmin(principal)) {
      const method = (await ownPendingMethods(state, principal)).find((m) => m.id === id);
      if (!method) return c.json({ error: "not_found" }, 409);
      c.set("auditSessionId", method.sessionId);
    }
    if (!(await service().resolveResult(id, result))) return c.json({ error: "not_found" }, 409);
    return c.json({ ok: true, id });
  });
}

/**
 * `POST /stream-tokens` (bearer secret required) `{ path? }` → `200 { token, expiresAt, path? }`:
 * a token a browser puts on an EventSource URL (`/remote-methods?token=…`, `/events?token=…`,
 * `/sessions/:id/events?token=…`) instead of the secret: it opens a stream within 60 s, and
 * that stream may reconnect with it for 24 h. `DELETE /stream-tokens/:token` revokes one
 * (`{ revoked: boolean }`), `DELETE /stream-tokens` all (`{ revoked: count }`). See core/stream-tokens.ts.
 */
export function streamTokenRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const { runtime } = state;
  const tokens = (c: Context<AppEnv>, action: string): StreamTokens => {
    // A stream token cannot mint or revoke: only a bearer credential (the secret or a key) can.
    if (!c.get("authenticated")) throw new VeilError("UNAUTHORIZED", `${action} stream tokens needs Authorization: Bearer <secret or API key>`);
    return runtime.streamTokens;
  };
  // A token acts as the key that minted it; a key revokes only its own tokens, the admin any.
  const revoker = (c: Context<AppEnv>) => (isAdmin(c.get("principal")) ? undefined : c.get("principal").id);
  app.post("/stream-tokens", async (c) => {
    const service = tokens(c, "minting");
    const body = await jsonBody<Static<typeof MintBody>>(c, MintBody);
    return c.json(service.mint(body.path, c.get("principal").id));
  });
  app.delete("/stream-tokens/:token", (c) => c.json({ revoked: tokens(c, "revoking").revoke(c.req.param("token"), revoker(c)) }));
  app.delete("/stream-tokens", (c) => c.json({ revoked: tokens(c, "revoking").revokeAll(revoker(c)) }));
}

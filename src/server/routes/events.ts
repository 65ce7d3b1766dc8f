import type { Hono } from "hono";
import { VeilError } from "../../errors.js";
import type { Principal } from "../../core/access/principal.js";
import type { AppEnv, ServerState } from "../context.js";
import { parseLastEventId, parseSequence, sseResponse, type SseOptions } from "../sse.js";
import { ownPendingMethods, pendingMethodFrames } from "./remote-methods.js";
import { sessionGate, streamEndsWithKey } from "../access.js";

/** Largest page of `?follow=false` history. */
export const MAX_EVENT_PAGE = 10_000;

/**
 * `GET /events[?session=ID][&methods=pending]` and `GET /sessions/:id/events`: live SSE with
 * replay from the durable log after `Last-Event-ID` (or `?lastEventId=`); `methods=pending`
 * sends each pending remote method's `method.pending` first, as `GET /remote-methods` does;
 * `?after=N&limit=M&follow=false` on a session answers the stored events as a JSON array
 * instead.
 */
export function eventRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const { runtime } = state;
  app.get("/events", async (c) => {
    const sessionId = c.req.query("session") || undefined;
    const methods = c.req.query("methods");
    if (methods !== undefined && methods !== "pending") throw new VeilError("VALIDATION_ERROR", 'methods must be "pending" (the pending remote methods go first)');
    // One stream can carry a client's dialogs too (a browser has six connections per host).
    const pending = methods ? (await ownPendingMethods(state, c.get("principal"))).filter((m) => !sessionId || m.sessionId === sessionId) : [];
    // The named session was checked to be the key's own (access.ts); every session means the key's.
    const admit = sessionId ? undefined : sessionGate(state, c.get("principal"));
    return sessionEvents(c.req.raw, state, c.get("principal"), sessionId, pendingMethodFrames(pending), admit);
  });
  app.get("/sessions/:id/events", async (c) => {
    const id = c.req.param("id");
    await runtime.sessions.get(id);
    const follow = c.req.query("follow");
    if (follow !== undefined && follow !== "true" && follow !== "false") throw new VeilError("VALIDATION_ERROR", "follow must be true or false");
    if (follow === "false") {
      const after = parseSequence(c.req.query("after"), "after") ?? 0;
      const limit = Math.min(parseSequence(c.req.query("limit"), "limit") ?? 1000, MAX_EVENT_PAGE);
      const page = limit === 0 ? [] : await runtime.events.replay({ sessionId: id }, after, limit);
      return c.body(`[${page.filter((e) => e.wire).map((e) => e.wire).join(",")}]`, 200, { "content-type": "application/json; charset=utf-8" });
    }
    return sessionEvents(c.req.raw, state, c.get("principal"), id);
  });
}

/** The SSE stream of one session (ids are its seq) or of every session (ids are gseq). */
export function sessionEvents(request: Request, state: ServerState, principal: Principal, sessionId: string | undefined, initial?: SseOptions["initial"], admit?: SseOptions["admit"]): Response {
  const endWhen = streamEndsWithKey(state, principal);
  const url = new URL(request.url);
  const lastEventId = parseLastEventId(request.headers.get("last-event-id") ?? undefined, url.searchParams.get("lastEventId") ?? undefined);
  return sseResponse({
    bus: state.runtime.bus,
    log: state.runtime.events,
    filter: sessionId ? { sessionId } : {},
    idField: sessionId ? "seq" : "gseq",
    lastEventId,
    signal: request.signal,
    heartbeatMs: state.heartbeatMs,
    initial,
    ...(admit ? { admit } : {}),
    ...(endWhen ? { endWhen } : {}),
    clients: state.runtime.metrics,
  });
}

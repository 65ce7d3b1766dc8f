import { Type, type Static } from "../../schema.js";
import type { Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { statusOf, VeilError } from "../../errors.js";
import type { RunResult } from "../../engines/types.js";
import type { SessionFilter, SessionRow, SessionStatus } from "../../store/store.js";
import { DURATION_PATTERN, parseDuration } from "../../base/duration.js";
import { closeSessions, idleSessions, MAX_CLOSE_IDS, type CloseOutcome } from "../../core/session-cleanup.js";
import { sessionView } from "../../core/session-view.js";
import { BudgetSchema, ReasoningSchema } from "../../config/schemas.js";
import { jsonBody } from "../body.js";
import type { AppEnv, ServerState } from "../context.js";
import { errorResponse } from "../errors.js";
import { assertBudgetLeft, assertMayStart, streamEndsWithKey } from "../access.js";
import { ownerFor, ownerScope, type Principal } from "../../core/access/principal.js";
import { sseResponse } from "../sse.js";
import { compileOutputSchema } from "../../engines/output-schema.js";
import { traceparentOf } from "../trace-context.js";
import { assertModelTakesContent, validateChatParts, type ChatContent } from "../../core/chat-content.js";

/** A title as callers give it: folded to one line and checked (1–200 characters) by core/session-title.ts. */
const TitleField = Type.String({ minLength: 1, maxLength: 1000, description: "one line, at most 200 characters once whitespace is folded" });

export const CreateBody = Type.Object(
  {
    agent: Type.Optional(Type.String({ minLength: 1 })),
    title: Type.Optional(TitleField),
    mode: Type.Optional(Type.String({ minLength: 1 })),
    model: Type.Optional(Type.String({ minLength: 1 })),
    reasoning: Type.Optional(ReasoningSchema),
    budget_override: Type.Optional(BudgetSchema),
  },
  { additionalProperties: false },
);

export const PatchBody = Type.Object({ title: Type.Union([TitleField, Type.Null()], { description: "the new title; null clears it" }) }, { additionalProperties: false });

/** `POST /sessions/close`: the sessions named, or every open top-level session idle for at least `idle` ("7d"). */
export const CloseBody = Type.Object(
  {
    ids: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: MAX_CLOSE_IDS })),
    idle: Type.Optional(Type.String({ pattern: DURATION_PATTERN, description: "close every open top-level session with no activity for this long: 90s, 30m, 24h, 7d, 2w" })),
  },
  { additionalProperties: false },
);

export const ChatBody = Type.Object(
  {
    /** Text, or OpenAI content parts (`text`, `image_url`); parts are checked one by one in chat-content.ts. */
    message: Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true }), { minItems: 1 })]),
    model: Type.Optional(Type.String({ minLength: 1 })),
    reasoning: Type.Optional(ReasoningSchema),
    stream: Type.Optional(Type.Boolean()),
    output_schema: Type.Optional(
      Type.Object({}, {
        additionalProperties: true,
        description: "A JSON Schema (draft-07, 2019-09 or 2020-12; at most 64 KiB): the turn's final answer must be a JSON text valid against it; the reply and chat.done then carry `structured`, the parsed value. An invalid schema is 400 VALIDATION_ERROR; an answer that still does not match after 2 repair requests ends the turn with OUTPUT_SCHEMA_MISMATCH (502).",
      }),
    ),
  },
  { additionalProperties: false },
);

export function chatReply(result: RunResult) {
  return {
    content: result.content,
    finishReason: result.finishReason,
    stopReason: result.stopReason,
    tokenUsage: result.usage,
    messageId: result.messageId,
    ...("structured" in result ? { structured: result.structured } : {}),
  };
}

export function sessionRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const { runtime } = state;
  const sessions = runtime.sessions;
  const publicSession = sessionView(runtime.config, runtime.agents);
  const closedReply = (outcome: CloseOutcome) => ({ closed: outcome.closed.map(publicSession), notFound: outcome.notFound });
  /** A key closes only its own sessions: to it, any other id is one that does not exist. */
  const closeOwn = async (principal: Principal, ids: readonly string[]): Promise<CloseOutcome> => {
    const owner = ownerScope(principal);
    if (owner === undefined) return closeSessions(sessions, [...ids]);
    const owners = await Promise.all(ids.map((id) => runtime.owners.of(id)));
    const outcome = await closeSessions(sessions, ids.filter((_, i) => owners[i] === owner));
    return { ...outcome, notFound: [...outcome.notFound, ...ids.filter((_, i) => owners[i] !== owner)] };
  };

  app.post("/sessions", async (c) => {
    const body = await jsonBody<Static<typeof CreateBody>>(c, CreateBody);
    const principal = c.get("principal");
    const agent = body.agent ?? "default";
    assertMayStart(principal, agent);
    const row = await sessions.create({
      agent,
      mode: body.mode,
      model: body.model,
      reasoning: body.reasoning,
      budget_override: body.budget_override,
      title: body.title,
      owner_key: ownerFor(principal),
    });
    runtime.owners.remember(row.id, row.owner_key);
    c.set("auditSessionId", row.id);
    return c.json(publicSession(row), 201);
  });

  app.get("/sessions", async (c) => {
    const ownerKey = ownerScope(c.get("principal"));
    const filter = listFilter(c.req.query());
    return c.json((await runtime.store.listSessions(ownerKey === undefined ? filter : { ...filter, ownerKey })).map(publicSession));
  });

  app.get("/sessions/:id", async (c) => c.json(publicSession(await sessions.get(c.req.param("id")))));

  app.patch("/sessions/:id", async (c) => {
    const id = c.req.param("id");
    const body = await jsonBody<Static<typeof PatchBody>>(c, PatchBody);
    await sessions.get(id);
    return c.json(publicSession(await sessions.rename(id, body.title)));
  });

  app.delete("/sessions/:id", async (c) => c.json(publicSession(await sessions.close(c.req.param("id")))));

  // Several at once, named in the query: a DELETE body is dropped by some proxies.
  app.delete("/sessions", async (c) => {
    return c.json(closedReply(await closeOwn(c.get("principal"), closeIdsOf(c.req.query("ids")))));
  });

  // The same with a body, for id lists that outgrow a URL, and by idleness (prune).
  app.post("/sessions/close", async (c) => {
    const body = await jsonBody<Static<typeof CloseBody>>(c, CloseBody);
    if ((body.ids === undefined) === (body.idle === undefined)) throw new VeilError("VALIDATION_ERROR", 'give "ids" (the sessions to close) or "idle" (close every open top-level session idle that long), one of the two');
    const ids = body.ids ?? (await idleSessions(runtime.store, runtime.clock.now(), parseDuration(body.idle!, "idle"))).map((row) => row.id);
    return c.json(closedReply(await closeOwn(c.get("principal"), ids)));
  });

  app.get("/sessions/:id/messages", async (c) => {
    const id = c.req.param("id");
    await sessions.get(id);
    const after = Number(c.req.query("after") ?? 0);
    const limit = c.req.query("limit") ? Number(c.req.query("limit")) : undefined;
    if (!Number.isInteger(after) || after < 0 || (limit !== undefined && (!Number.isInteger(limit) || limit < 1))) {
      throw new VeilError("VALIDATION_ERROR", "after and limit must be non-negative integers");
    }
    return c.json(await runtime.store.listMessages(id, { afterSeq: after, limit }));
  });

  app.get("/sessions/:id/todos", async (c) => {
    const id = c.req.param("id");
    await sessions.get(id);
    return c.json(await runtime.store.getTodos(id));
  });

  app.post("/sessions/:id/cancel", async (c) => {
    const id = c.req.param("id");
    const cancelled = await sessions.cancel(id);
    return c.json({ ok: true, cancelled, session: publicSession(await sessions.get(id)) });
  });
  app.post("/sessions/:id/suspend", async (c) => c.json({ ok: true, session: publicSession(await sessions.suspend(c.req.param("id"))) }));
  app.post("/sessions/:id/compact", async (c) => {
    const outcome = await sessions.compact(c.req.param("id"));
    return c.json({ tokensBefore: outcome.tokensBefore, tokensAfter: outcome.tokensAfter, summaryMessageId: outcome.summaryMessageId });
  });
  app.post("/sessions/:id/resume", async (c) => c.json({ ok: true, session: publicSession(await sessions.resume(c.req.param("id"))) }));

  app.post("/sessions/:id/chat", async (c) => {
    const id = c.req.param("id");
    const body = await jsonBody<Static<typeof ChatBody>>(c, ChatBody);
    // A schema AJV refuses is a 400 before anything is looked up, stored or sent.
    const outputSchema = body.output_schema === undefined ? undefined : compileOutputSchema(body.output_schema, "output_schema");
    const sendOptions = { model: body.model, reasoning: body.reasoning, meta: { source: "http" }, ...(outputSchema ? { outputSchema } : {}), ...traceparentOf(c.req.header("traceparent")) };
    const wantsStream = body.stream === true || (c.req.header("accept") ?? "").includes("text/event-stream");
    const session = await sessions.get(id);
    await assertBudgetLeft(state, c.get("principal"));
    // Before anything is stored or streamed: a model that cannot be reached is one 400 CONFIG_ERROR.
    await sessions.checkModelReady(session, body.model);
    const message = checkChatMessage(state, session, body.message as ChatContent, body.model);
    // A chat here goes on with a one-shot session (veil run, the OpenAI wire): it stays open.
    if (session.ephemeral) await sessions.keep(id);
    if (wantsStream) {
      // Subscribe before sending so no event of the turn is missed.
      let settle!: () => void;
      const ended = new Promise<void>((resolve) => (settle = resolve));
      const endWhen = streamEndsWithKey(state, c.get("principal"));
      const response = sseResponse({
        bus: runtime.bus,
        filter: { sessionId: id },
        idField: "seq",
        signal: c.req.raw.signal,
        heartbeatMs: state.heartbeatMs,
        until: ended,
        ...(endWhen ? { endWhen } : {}),
        clients: runtime.metrics,
      });
      try {
        const receipt = await sessions.send(id, message, sendOptions);
        // Its run's chat.done was published before the result settles, so the stream has it.
        receipt.result.then(settle, settle);
      } catch (error) {
        settle();
        return errorResponse(c, error, runtime.log);
      }
      return response;
    }
    const receipt = await sessions.send(id, message, sendOptions);
    const result = await receipt.result;
    if (result.stopReason === "error" && result.error) {
      return c.json({ error: { code: result.error.code, message: result.error.message }, ...chatReply(result) }, statusOf(result.error.code) as ContentfulStatusCode);
    }
    return c.json(chatReply(result));
  });

}

/** GET /sessions' query: `status`, `parent`, `q` (search), `order` (activity, the default, or created), `limit`. */
function listFilter(query: Record<string, string>): SessionFilter {
  const { status, parent, q, order = "activity", limit } = query;
  if (status && !["idle", "running", "suspended", "closed"].includes(status)) throw new VeilError("VALIDATION_ERROR", `unknown status "${status}"`);
  if (order !== "activity" && order !== "created") throw new VeilError("VALIDATION_ERROR", `order: "activity" (most recently active first, the default) or "created" (oldest first), not "${order}"`);
  const max = limit === undefined ? undefined : Number(limit);
  if (max !== undefined && (!Number.isInteger(max) || max < 1)) throw new VeilError("VALIDATION_ERROR", "limit must be a positive integer");
  return { status: status as SessionStatus | undefined, parentSessionId: parent, query: q?.trim() || undefined, order, limit: max };
}

/** `DELETE /sessions?ids=a,b`: the ids, comma-separated; none at all is refused (it never means "every session"). */
function closeIdsOf(query: string | undefined): string[] {
  const ids = (query ?? "").split(",").map((id) => id.trim()).filter((id) => id.length > 0);
  if (ids.length === 0) throw new VeilError("VALIDATION_ERROR", "ids: name the sessions to close, comma-separated (DELETE /sessions?ids=ID,ID)");
  if (ids.length > MAX_CLOSE_IDS) throw new VeilError("VALIDATION_ERROR", `ids: at most ${MAX_CLOSE_IDS} sessions at once`);
  return ids;
}

/** The message as send() takes it, after its parts are checked and the turn's model is known to take them. */
export function checkChatMessage(state: ServerState, session: SessionRow, message: ChatContent, perCallModel?: string): ChatContent {
  const { runtime } = state;
  const checked = typeof message === "string" ? message : validateChatParts(message);
  const agent = Object.hasOwn(runtime.agents(), session.agent) ? runtime.agents()[session.agent] : undefined;
  assertModelTakesContent(checked, { perCallModel, session, agent, settings: runtime.config.settings, models: runtime.config.models });
  return checked;
}

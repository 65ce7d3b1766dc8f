import { Type, type Static } from "../../schema.js";
import type { Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { statusOf, VeilError } from "../../errors.js";
import type { RunResult } from "../../engines/types.js";
import type { SessionRow } from "../../store/store.js";
import { BudgetSchema, ReasoningSchema } from "../../config/schemas.js";
import { jsonBody } from "../body.js";
import type { AppEnv, ServerState } from "../context.js";
import { errorResponse } from "../errors.js";
import { sseResponse } from "../sse.js";
import { assertModelTakesContent, validateChatParts, type ChatContent } from "../../core/chat-content.js";

export const CreateBody = Type.Object(
  {
    agent: Type.Optional(Type.String({ minLength: 1 })),
    mode: Type.Optional(Type.String({ minLength: 1 })),
    model: Type.Optional(Type.String({ minLength: 1 })),
    reasoning: Type.Optional(ReasoningSchema),
    budget_override: Type.Optional(BudgetSchema),
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
  },
  { additionalProperties: false },
);

/** The public row plus the extra fields clients find useful. */
export function publicSession(row: SessionRow) {
  return {
    id: row.id,
    agent: row.agent,
    mode: row.mode,
    status: row.status,
    parent_session_id: row.parent_session_id,
    spawn_depth: row.spawn_depth,
    instance_name: row.instance_name,
    model: row.model,
    reasoning: row.reasoning,
    budget_override: row.budget_override,
    context_size: row.context_size,
    token_usage: row.token_usage,
    cost_usd: row.cost_usd,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function chatReply(result: RunResult) {
  return {
    content: result.content,
    finishReason: result.finishReason,
    stopReason: result.stopReason,
    tokenUsage: result.usage,
    messageId: result.messageId,
  };
}

export function sessionRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const { runtime } = state;
  const sessions = runtime.sessions;

  app.post("/sessions", async (c) => {
    const body = await jsonBody<Static<typeof CreateBody>>(c, CreateBody);
    const row = await sessions.create({
      agent: body.agent ?? "default",
      mode: body.mode,
      model: body.model,
      reasoning: body.reasoning,
      budget_override: body.budget_override,
    });
    return c.json(publicSession(row), 201);
  });

  app.get("/sessions", async (c) => {
    const status = c.req.query("status");
    const parent = c.req.query("parent");
    if (status && !["idle", "running", "suspended", "closed"].includes(status)) throw new VeilError("VALIDATION_ERROR", `unknown status "${status}"`);
    const rows = await runtime.store.listSessions({ status: status as SessionRow["status"] | undefined, parentSessionId: parent });
    return c.json(rows.map(publicSession));
  });

  app.get("/sessions/:id", async (c) => c.json(publicSession(await sessions.get(c.req.param("id")))));

  app.delete("/sessions/:id", async (c) => c.json(publicSession(await sessions.close(c.req.param("id")))));

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
    const wantsStream = body.stream === true || (c.req.header("accept") ?? "").includes("text/event-stream");
    const session = await sessions.get(id);
    // Before anything is stored or streamed: a model that cannot be reached is one 400 CONFIG_ERROR.
    await sessions.checkModelReady(session, body.model);
    const message = checkChatMessage(state, session, body.message as ChatContent, body.model);
    if (wantsStream) {
      // Subscribe before sending so no event of the turn is missed.
      let settle!: () => void;
      const ended = new Promise<void>((resolve) => (settle = resolve));
      const response = sseResponse({
        bus: runtime.bus,
        filter: { sessionId: id },
        idField: "seq",
        signal: c.req.raw.signal,
        heartbeatMs: state.heartbeatMs,
        until: ended,
      });
      try {
        const receipt = await sessions.send(id, message, { model: body.model, reasoning: body.reasoning, meta: { source: "http" } });
        // Its run's chat.done was published before the result settles, so the stream has it.
        receipt.result.then(settle, settle);
      } catch (error) {
        settle();
        return errorResponse(c, error, runtime.log);
      }
      return response;
    }
    const receipt = await sessions.send(id, message, { model: body.model, reasoning: body.reasoning, meta: { source: "http" } });
    const result = await receipt.result;
    if (result.stopReason === "error" && result.error) {
      return c.json({ error: { code: result.error.code, message: result.error.message }, ...chatReply(result) }, statusOf(result.error.code) as ContentfulStatusCode);
    }
    return c.json(chatReply(result));
  });

}

/** The message as send() takes it, after its parts are checked and the turn's model is known to take them. */
export function checkChatMessage(state: ServerState, session: SessionRow, message: ChatContent, perCallModel?: string): ChatContent {
  const { runtime } = state;
  const checked = typeof message === "string" ? message : validateChatParts(message);
  const agent = Object.hasOwn(runtime.agents(), session.agent) ? runtime.agents()[session.agent] : undefined;
  assertModelTakesContent(checked, { perCallModel, session, agent, settings: runtime.config.settings, models: runtime.config.models });
  return checked;
}

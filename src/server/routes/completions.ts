import { Type, type Static } from "../../schema.js";
import type { Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { stream as honoStream } from "hono/streaming";
import { VeilError } from "../../errors.js";
import { createChunkEncoder, fromWireMessages, fromWireTools, toChatCompletion } from "../../llm/chat-completion.js";
import { pickModelKey } from "../../llm/models.js";
import type { StreamEvent } from "../../llm/types.js";
import { jsonBody } from "../body.js";
import type { AppEnv, ServerState } from "../context.js";
import { agentCompletion, parseAgentModel } from "./agent-completions.js";

export const CompletionBody = Type.Object(
  {
    model: Type.Optional(Type.String({ minLength: 1 })),
    messages: Type.Array(Type.Object({ role: Type.String() }, { additionalProperties: true }), { minItems: 1 }),
    tools: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
    stream: Type.Optional(Type.Boolean()),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    max_completion_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    temperature: Type.Optional(Type.Number()),
    reasoning_effort: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

const STATUS_OF: Record<string, ContentfulStatusCode> = {
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  MODEL_NOT_FOUND: 404,
  RATE_LIMITED: 429,
  CANCELLED: 499 as ContentfulStatusCode,
  TIMEOUT: 504,
};

/**
 * OpenAI chat completions through Veil's provider fallback chain, so the
 * official `openai` SDK pointed at http://HOST:PORT/v1 works. A model `agent/<name>[/<sessionId>]`
 * is answered by that agent's loop instead (agent-completions.ts).
 */
export function completionRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const handler = async (c: Context<AppEnv>) => {
    const { runtime } = state;
    const body = await jsonBody<Static<typeof CompletionBody>>(c, CompletionBody);
    const agentTarget = parseAgentModel(body.model);
    if (agentTarget) return agentCompletion(c, state, agentTarget, body);
    const modelKey = pickModelKey({ perCall: body.model, session: null, agent: undefined, settings: runtime.config.settings });
    const request = {
      modelKey,
      messages: fromWireMessages(body.messages),
      tools: fromWireTools(body.tools),
      maxTokens: body.max_completion_tokens ?? body.max_tokens,
      temperature: body.temperature,
      reasoning: body.reasoning_effort ? { effort: body.reasoning_effort as "low" } : null,
      signal: c.req.raw.signal,
    };
    const meta = { id: `chatcmpl-${runtime.ids.next("cmpl").slice(5)}`, model: modelKey, created: Math.floor(runtime.clock.now() / 1000) };

    if (body.stream) {
      c.header("content-type", "text/event-stream; charset=utf-8");
      c.header("cache-control", "no-cache");
      return honoStream(c, async (out) => {
        const encoder = createChunkEncoder(meta);
        for await (const event of runtime.llm.stream(request)) {
          for (const chunk of encoder.encode(event)) await out.write(`data: ${JSON.stringify(chunk)}\n\n`);
        }
        await out.write("data: [DONE]\n\n");
      });
    }

    let end: Extract<StreamEvent, { type: "done" | "error" }> | undefined;
    for await (const event of runtime.llm.stream(request)) if (event.type === "done" || event.type === "error") end = event;
    if (!end) throw new VeilError("LLM_ERROR", "the model stream ended without a result");
    if (end.type === "error") {
      return c.json({ error: { code: end.error.code, message: end.error.message, type: "veil_error" } }, STATUS_OF[end.error.code] ?? 502);
    }
    return c.json(toChatCompletion(meta, { message: end.message, finishReason: end.finishReason, usage: end.usage }));
  };
  app.post("/completions", handler);
  app.post("/v1/chat/completions", handler);
}

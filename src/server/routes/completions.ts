import { Type, type Static } from "../../schema.js";
import type { Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { stream as honoStream } from "hono/streaming";
import { CLAUDE_CLI_PREFIX } from "../../engines/claude-cli/index.js";
import { statusOf, VeilError } from "../../errors.js";
import { createChunkEncoder, toChatCompletion } from "../../llm/chat-completion.js";
import { pickModelKey } from "../../llm/models.js";
import { reportedError } from "../../llm/reported-error.js";
import type { LlmError, StreamEvent } from "../../llm/types.js";
import { jsonBody } from "../body.js";
import type { AppEnv, ServerState } from "../context.js";
import { agentCompletion, parseAgentModel } from "./agent-completions.js";
import { assertBudgetLeft, streamEndsWithKey } from "../access.js";

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
    response_format: Type.Optional(
      Type.Unknown({
        description:
          'Sent to the provider as given. With model agent/<name>: { "type": "json_schema", "json_schema": { "name", "schema" } } binds the agent\'s final answer to the schema (the message content is then its JSON text; a mismatch after 2 repair requests is 502 OUTPUT_SCHEMA_MISMATCH), "json_object" to any JSON object, "text" to nothing.',
      }),
    ),
  },
  { additionalProperties: true },
);

type Body = Static<typeof CompletionBody>;
type End = Extract<StreamEvent, { type: "done" | "error" }>;

const OUTPUT = new Set<StreamEvent["type"]>(["text", "thinking", "tool_call_start", "tool_call_delta"]);

/**
 * OpenAI chat completions through Veil's provider fallback chain, so the official `openai`
 * SDK pointed at http://HOST:PORT/v1 works. The client's body goes to the provider as it is
 * (every field: tool_choice, stop, response_format, seed, vendor extensions…), only `model`
 * becoming the provider's model id. A model `agent/<name>[/<sessionId>]` is answered by that
 * agent's loop instead (agent-completions.ts).
 */
export function completionRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const handler = async (c: Context<AppEnv>) => {
    const { runtime } = state;
    const body = await jsonBody<Body>(c, CompletionBody);
    const agentTarget = parseAgentModel(body.model);
    const principal = c.get("principal");
    await assertBudgetLeft(state, principal);
    if (agentTarget) return agentCompletion(c, state, agentTarget, body);
    // A proxied call's cost is no session's, so a key's budget could not count it.
    if (principal.key?.budget_usd !== null && principal.key?.budget_usd !== undefined) {
      throw new VeilError("FORBIDDEN", `key "${principal.id}" has a budget, and a proxied completion is not metered against it: ask an agent instead ("model": "agent/<name>")`);
    }
    const modelKey = proxiedModelKey(state, body.model);
    // A key's streamed answer ends once the key stops working: the provider call is cut.
    const keyLost = new AbortController();
    const events = runtime.llm.stream({
      modelKey,
      // The provider is sent the client's own body (messages included) instead.
      messages: [],
      wireBody: body,
      signal: AbortSignal.any([c.req.raw.signal, keyLost.signal]),
    })[Symbol.asyncIterator]();
    const meta = { id: `chatcmpl-${runtime.ids.next("cmpl").slice(5)}`, model: modelKey, created: Math.floor(runtime.clock.now() / 1000) };

    if (body.stream) {
      // Nothing is answered before the call gave output or ended, so a call that fails before
      // any output gets its status (400 CONFIG_ERROR, 502 LLM_ERROR…) like a plain one.
      const head: StreamEvent[] = [];
      for (let next = await events.next(); !next.done; next = await events.next()) {
        head.push(next.value);
        if (OUTPUT.has(next.value.type) || next.value.type === "done" || next.value.type === "error") break;
      }
      const last = head.at(-1);
      if (last?.type === "error") return errorAnswer(c, last.error);
      c.header("content-type", "text/event-stream; charset=utf-8");
      c.header("cache-control", "no-cache");
      let lost: string | undefined;
      const unwatch = streamEndsWithKey(state, principal)?.((why) => ((lost = why), keyLost.abort())) ?? (() => {});
      return honoStream(c, async (out) => {
        const encoder = createChunkEncoder(meta);
        const write = async (event: StreamEvent) => {
          if (lost) return;
          // An error after output ends the stream in a chunk, under the code a plain call would answer with.
          const reported = event.type === "error" ? { ...event, error: { ...event.error, code: reportedError(event.error).code as LlmError["code"] } } : event;
          for (const chunk of encoder.encode(reported)) await out.write(`data: ${JSON.stringify(chunk)}\n\n`);
        };
        try {
          for (const event of head) await write(event);
          for (let next = await events.next(); !next.done && !lost; next = await events.next()) await write(next.value);
          await out.write(lost ? `: ${lost}\n\n` : "data: [DONE]\n\n");
        } finally {
          unwatch();
        }
      });
    }

    let end: End | undefined;
    for (let next = await events.next(); !next.done; next = await events.next()) if (next.value.type === "done" || next.value.type === "error") end = next.value;
    if (!end) throw new VeilError("LLM_ERROR", "the model stream ended without a result");
    if (end.type === "error") return errorAnswer(c, end.error);
    return c.json(toChatCompletion(meta, { message: end.message, finishReason: end.finishReason, usage: end.usage }));
  };
  app.post("/completions", handler);
  app.post("/v1/chat/completions", handler);
}

/**
 * The key the client asked for (else the default model), once a provider can be sent it:
 * CONFIG_ERROR names what is missing (no model configured, no provider for the key, the
 * provider's key variable unset). A cc/ key runs on the claude-cli engine, which has no
 * provider to forward a completion to.
 */
function proxiedModelKey(state: ServerState, requested: string | undefined): string {
  const { runtime } = state;
  const key = pickModelKey({ perCall: requested, settings: runtime.config.settings });
  if (key.startsWith(CLAUDE_CLI_PREFIX)) {
    throw new VeilError(
      "CONFIG_ERROR",
      `model "${key}" runs on the claude-cli engine, and this proxy only forwards to providers (none serves cc/ keys): ask an agent whose model it is ("model": "agent/<name>"), or pick a provider's model (GET /v1/models)`,
      { details: { model: key } },
    );
  }
  runtime.llm.checkReady?.(key);
  return key;
}

/** A failed call as OpenAI clients read errors, with the status of its code (a provider's refusal is 502 LLM_ERROR). */
function errorAnswer(c: Context<AppEnv>, error: LlmError): Response {
  const reported = reportedError(error);
  return c.json({ error: { code: reported.code, message: reported.message, type: "veil_error", ...(reported.details ? { details: reported.details } : {}) } }, statusOf(reported.code) as ContentfulStatusCode);
}

import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { stream as honoStream } from "hono/streaming";
import type { VeilEvent } from "../../base/events.js";
import type { ChatContent, ChatPart } from "../../core/chat-content.js";
import type { RunResult } from "../../engines/types.js";
import { statusOf, VeilError } from "../../errors.js";
import { createChunkEncoder, toChatCompletion, type CompletionMeta } from "../../llm/chat-completion.js";
import type { SessionRow } from "../../store/store.js";
import type { AppEnv, ServerState } from "../context.js";
import { AGENT_MODEL_PREFIX } from "./models.js";
import { compileOutputSchema, type OutputSchema } from "../../engines/output-schema.js";
import { checkChatMessage } from "./sessions.js";
import { titleFromMessage } from "../../core/session-title.js";
import { assertMayStart, assertOwns, streamEndsWithKey } from "../access.js";
import { ownerFor } from "../../core/access/principal.js";
import { traceparentOf } from "../trace-context.js";

/** The header that names the session an `agent/<name>` completion ran in. */
export const SESSION_HEADER = "x-veil-session";

type WireMessage = { role: string; content?: unknown };

/** `agent/<name>` → a new session of that agent; `agent/<name>/<sessionId>` → that session. */
export function parseAgentModel(model: string | undefined): { agent: string; sessionId?: string } | null {
  if (!model?.startsWith(AGENT_MODEL_PREFIX)) return null;
  const rest = model.slice(AGENT_MODEL_PREFIX.length);
  const slash = rest.indexOf("/");
  const agent = slash < 0 ? rest : rest.slice(0, slash);
  const sessionId = slash < 0 ? undefined : rest.slice(slash + 1);
  if (!agent || sessionId === "") throw new VeilError("VALIDATION_ERROR", `model "${model}": expected agent/<name> or agent/<name>/<sessionId>`);
  return { agent, sessionId };
}

/**
 * A chat completion answered by an agent's full loop (its tools included) in a Veil session.
 * The last user message is the turn. For a new session, earlier messages are sent along as one
 * transcript text part before it; a continued session already holds its history, so they are
 * ignored. The session id comes back in the `x-veil-session` header and in `model`
 * (`agent/<name>/<sessionId>`, ready to send again to continue).
 */
export async function agentCompletion(
  c: Context<AppEnv>,
  state: ServerState,
  target: { agent: string; sessionId?: string },
  body: { messages: WireMessage[]; stream?: boolean; response_format?: unknown },
): Promise<Response> {
  const { runtime } = state;
  const outputSchema = outputSchemaOf(body.response_format);
  const lastUser = body.messages.findLastIndex((m) => m.role === "user");
  if (lastUser < 0) throw new VeilError("VALIDATION_ERROR", "messages: an agent/<name> completion needs a user message");
  const turn = wireContent(body.messages[lastUser]!.content, `messages[${lastUser}].content`);
  const session = await openSession(c, state, target, turn);
  const earlier = target.sessionId ? [] : body.messages.slice(0, lastUser);
  const message = checkChatMessage(state, session, withTranscript(earlier, turn));
  const meta: CompletionMeta = { id: `chatcmpl-${runtime.ids.next("cmpl").slice(5)}`, model: `${AGENT_MODEL_PREFIX}${target.agent}/${session.id}`, created: Math.floor(runtime.clock.now() / 1000) };
  c.header(SESSION_HEADER, session.id);
  const sendOptions = { meta: { source: "openai" }, ...(outputSchema ? { outputSchema } : {}), ...traceparentOf(c.req.header("traceparent")) };

  if (!body.stream) {
    const result = await (await runtime.sessions.send(session.id, message, sendOptions)).result;
    if (result.stopReason === "error" && result.error) {
      return c.json({ error: { code: result.error.code, message: result.error.message, type: "veil_error" } }, statusOf(result.error.code) as ContentfulStatusCode);
    }
    return c.json(toChatCompletion(meta, { message: { content: result.content, thinking: null, toolCalls: [] }, finishReason: finishOf(result), usage: result.usage }));
  }

  // Subscribe before sending so no event of the turn is missed; the run's chat.done is
  // published before its result settles, so every event of the turn is queued by then.
  const queue: VeilEvent[] = [];
  let wake = () => {};
  const unsubscribe = runtime.bus.subscribe({ sessionId: session.id }, (event) => {
    queue.push(event);
    wake();
  });
  let receipt: Awaited<ReturnType<typeof runtime.sessions.send>>;
  try {
    receipt = await runtime.sessions.send(session.id, message, sendOptions);
  } catch (error) {
    unsubscribe();
    throw error;
  }
  let result: RunResult | undefined;
  receipt.result.then((r) => ((result = r), wake()), () => wake());
  // A key's stream ends once the key stops working (its run goes on, like a chat's stream).
  let lost: string | undefined;
  const unwatch = streamEndsWithKey(state, c.get("principal"))?.((why) => ((lost = why), wake())) ?? (() => {});
  c.header("content-type", "text/event-stream; charset=utf-8");
  c.header("cache-control", "no-cache");
  return honoStream(c, async (out) => {
    const encoder = createChunkEncoder(meta);
    const write = (line: string) => out.write(line);
    try {
      for (;;) {
        for (let event = queue.shift(); event && !lost; event = queue.shift()) for (const line of eventLines(event, encoder)) await write(line);
        if (lost) return void (await write(`: ${lost}\n\n`));
        if (result) break;
        await new Promise<void>((resolve) => (wake = resolve));
      }
      const done = result!;
      const end = done.stopReason === "error" && done.error
        ? encoder.encode({ type: "error", error: { code: done.error.code as "LLM_ERROR", message: done.error.message, retryable: false }, usage: done.usage, partial: { content: done.content, thinking: null, toolCalls: [] }, model: meta.model })
        : encoder.encode({ type: "done", message: { content: done.content, thinking: null, toolCalls: [] }, finishReason: finishOf(done), usage: done.usage, model: meta.model });
      for (const chunk of end) await write(`data: ${JSON.stringify(chunk)}\n\n`);
      await write("data: [DONE]\n\n");
    } finally {
      unsubscribe();
      unwatch();
    }
  });
}

/**
 * `response_format` as the agent's turn takes it: `json_schema` binds the final answer to its
 * schema (the message content is then the JSON text), `json_object` to any JSON object,
 * `text` (or none) to nothing.
 */
export function outputSchemaOf(format: unknown): OutputSchema | undefined {
  if (format === undefined || format === null) return undefined;
  const type = typeof format === "object" ? (format as { type?: unknown }).type : undefined;
  if (type === "text") return undefined;
  if (type === "json_object") return compileOutputSchema({ type: "object" }, "response_format", "json_object");
  if (type !== "json_schema") throw new VeilError("VALIDATION_ERROR", `response_format.type must be "json_schema", "json_object" or "text", got ${JSON.stringify(type)}`);
  const spec = (format as { json_schema?: unknown }).json_schema;
  if (typeof spec !== "object" || spec === null) throw new VeilError("VALIDATION_ERROR", "response_format.json_schema: an object { name, schema } is required");
  const { name, schema } = spec as { name?: unknown; schema?: unknown };
  if (typeof name !== "string") throw new VeilError("VALIDATION_ERROR", "response_format.json_schema.name: a string is required");
  if (schema === undefined) throw new VeilError("VALIDATION_ERROR", "response_format.json_schema.schema: a JSON Schema is required");
  return compileOutputSchema(schema, "response_format.json_schema.schema", name);
}

/** A session event as SSE lines: text and thinking as chunk deltas, tool activity as comments. */
function eventLines(event: VeilEvent, encoder: ReturnType<typeof createChunkEncoder>): string[] {
  const data = (delta: { type: "text" | "thinking"; delta: string }) => encoder.encode(delta).map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`);
  const e = event as VeilEvent & Record<string, unknown>;
  switch (event.type) {
    case "chat.chunk":
      return data({ type: "text", delta: String(e.content ?? "") });
    case "thinking.chunk":
      return data({ type: "thinking", delta: String(e.content ?? "") });
    case "tool.start":
      return [`: tool ${String(e.toolName)} ${oneLine(JSON.stringify(e.toolInput ?? {}))}\n\n`];
    case "tool.end":
      return [`: tool ${String(e.toolName)} ${e.success ? "ok" : "error"} ${Number(e.durationMs ?? 0)}ms ${oneLine(String(e.outputPreview ?? ""))}\n\n`];
    default:
      return [];
  }
}

/** SSE comments end at a newline, and a chat UI only needs a glance: one line, at most 200 characters. */
function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 200 ? `${flat.slice(0, 199)}…` : flat;
}

/**
 * The session to run in, once its model can be reached (a new session is created only then).
 * A new session is a one-shot caller's (closed once idle for limits.idleSessionTtl unless
 * continued), titled from the user's new message rather than the transcript sent before it,
 * and the requesting key's; `agent/<name>/<sessionId>` continues one (of that key), which keeps it.
 */
async function openSession(c: Context<AppEnv>, state: ServerState, target: { agent: string; sessionId?: string }, turn: ChatContent): Promise<SessionRow> {
  const { sessions, owners } = state.runtime;
  const principal = c.get("principal");
  if (!target.sessionId) {
    assertMayStart(principal, target.agent);
    // An unknown agent is create()'s AGENT_NOT_FOUND; a known one's model is checked first.
    if (Object.hasOwn(state.runtime.agents(target.agent), target.agent)) await sessions.checkModelReady({ agent: target.agent, model: null });
    const created = await sessions.create({ agent: target.agent, origin: "openai", ephemeral: true, title: titleFromMessage(turn), owner_key: ownerFor(principal) });
    owners.remember(created.id, created.owner_key);
    return created;
  }
  await assertOwns(state, principal, target.sessionId);
  const session = await sessions.get(target.sessionId);
  if (session.agent !== target.agent) {
    throw new VeilError("VALIDATION_ERROR", `session "${session.id}" belongs to agent "${session.agent}", not "${target.agent}" (use model agent/${session.agent}/${session.id})`);
  }
  await sessions.checkModelReady(session);
  return session.ephemeral ? sessions.keep(session.id) : session;
}

/** An OpenAI message content: a string or content parts (checked later, part by part). */
function wireContent(content: unknown, where: string): ChatContent {
  if (typeof content === "string" && content.length > 0) return content;
  if (Array.isArray(content) && content.length > 0) return content as ChatPart[];
  throw new VeilError("VALIDATION_ERROR", `${where}: a non-empty string or an array of content parts`);
}

/** Earlier turns of a new conversation, as one text part ahead of the user's message. */
function withTranscript(earlier: WireMessage[], turn: ChatContent): ChatContent {
  const lines = earlier.map((m) => `${m.role}: ${textOf(m.content)}`).filter((line) => !line.endsWith(": "));
  if (lines.length === 0) return turn;
  const context = `The conversation so far:\n\n${lines.join("\n\n")}\n\nThe user's new message follows.`;
  return typeof turn === "string" ? `${context}\n\n${turn}` : [{ type: "text", text: context }, ...turn];
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part) => (part?.type === "text" && typeof part.text === "string" ? part.text : part?.type ? `[${part.type}]` : "")).filter(Boolean).join(" ");
}

function finishOf(result: RunResult): string {
  if (result.stopReason === "cancelled") return "stop";
  return result.finishReason === "length" ? "length" : "stop";
}

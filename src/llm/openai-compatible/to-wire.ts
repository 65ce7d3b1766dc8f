import type { ReasoningEffort, ReasoningStyle, StructuredOutputMode } from "../../config/types.js";
import { wireToolArguments } from "../tool-arguments.js";
import type { ContentPart, LlmMessage, LlmRequest, LlmToolSpec } from "../types.js";
import { reasoningFields, thinkingEchoField, type WireReasoningFields } from "./reasoning.js";
import { responseFormat, type WireResponseFormat } from "./response-format.js";

/** OpenAI chat-completions wire shapes (the subset we send). */
export type WireContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } }
  | { type: "input_audio"; input_audio: { data: string; format: string } };

export interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export type WireMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | WireContentPart[] }
  | { role: "assistant"; content: string | null; tool_calls?: WireToolCall[]; reasoning_content?: string; reasoning?: string }
  | { role: "tool"; tool_call_id: string; content: string };

export interface WireTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface WireRequest extends WireReasoningFields {
  model: string;
  tools?: WireTool[];
  messages: WireMessage[];
  stream: boolean;
  stream_options?: { include_usage: boolean };
  max_tokens?: number;
  temperature?: number;
  response_format?: WireResponseFormat;
}

/** What the body depends on of the provider's settings. */
export interface WireDialect {
  /** The provider's reasoning dialect. */
  style?: ReasoningStyle;
  /** When an output schema goes out as response_format (see response-format.ts). */
  structuredOutput?: StructuredOutputMode;
}

/**
 * Builds the request body for POST /chat/completions in the provider's dialect. The tools go
 * before the messages, in the order chat templates render them (system message, tools, the
 * rest), so the body's bytes also begin with what sessions of one agent share.
 */
export function toWireRequest(request: LlmRequest, stream = true, dialect: WireDialect = {}): WireRequest {
  const style = dialect.style ?? "openai";
  const output = responseFormat(request, dialect.structuredOutput ?? "without-tools");
  const tools = request.tools && request.tools.length > 0 && output.keepTools ? { tools: request.tools.map(toWireTool) } : {};
  const body: WireRequest = { model: request.model, ...tools, messages: toWireMessages(request.messages, style), stream };
  if (stream) body.stream_options = { include_usage: true };
  if (output.format) body.response_format = output.format;
  Object.assign(body, reasoningFields(request.reasoning, style, request.maxTokens));
  if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  return body;
}

/**
 * The body POST /chat/completions is sent: the client's own body when the request carries one
 * (the completions proxy), else one built from the request (toWireRequest).
 */
export function requestBody(request: LlmRequest, dialect: WireDialect = {}): object {
  return request.wireBody ? forwardedBody(request.wireBody, request.model, dialect.style ?? "openai") : toWireRequest(request, true, dialect);
}

/**
 * A client's body as it is, but for `model` (the provider's id) and two things its provider
 * needs to be told Veil's way: a streamed body without stream_options asks for usage (Veil's
 * answer ends with a usage chunk), and a `reasoning_effort` goes out in the provider's own
 * reasoning dialect when that is not OpenAI's (unless the body already speaks the dialect).
 */
function forwardedBody(wireBody: Readonly<Record<string, unknown>>, model: string, style: ReasoningStyle): Record<string, unknown> {
  const body: Record<string, unknown> = { ...wireBody, model };
  if (body.stream === true && body.stream_options === undefined) body.stream_options = { include_usage: true };
  if (style !== "openai" && typeof body.reasoning_effort === "string") {
    const maxTokens = body.max_completion_tokens ?? body.max_tokens;
    const fields = reasoningFields({ effort: body.reasoning_effort as ReasoningEffort }, style, typeof maxTokens === "number" ? maxTokens : undefined);
    delete body.reasoning_effort;
    for (const [name, value] of Object.entries(fields)) body[name] ??= value;
  }
  return body;
}

export function toWireTool(tool: LlmToolSpec): WireTool {
  return { type: "function", function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}

/**
 * Maps engine-neutral messages to the wire. Tool results carry only text on the wire; their
 * image/audio parts go into one user message placed after the run of consecutive tool
 * messages (a user message between two tool results would break the tool_calls pairing).
 * A tool call's arguments that are not a JSON object go as `{}` (see wireToolArguments).
 */
export function toWireMessages(messages: LlmMessage[], style: ReasoningStyle = "openai"): WireMessage[] {
  const echo = thinkingEchoField(style);
  const out: WireMessage[] = [];
  let pendingMedia: WireContentPart[] = [];
  const flushMedia = () => {
    if (pendingMedia.length === 0) return;
    out.push({ role: "user", content: pendingMedia });
    pendingMedia = [];
  };
  for (const message of messages) {
    if (message.role !== "tool") flushMedia();
    switch (message.role) {
      case "system":
        out.push({ role: "system", content: message.content });
        break;
      case "user":
        out.push({ role: "user", content: typeof message.content === "string" ? message.content : message.content.map(toWirePart) });
        break;
      case "assistant": {
        const wire: WireMessage = { role: "assistant", content: message.content };
        if (message.toolCalls && message.toolCalls.length > 0) {
          wire.tool_calls = message.toolCalls.map((call) => ({
            id: call.id,
            type: "function",
            function: { name: call.name, arguments: wireToolArguments(call.arguments) },
          }));
          if (echo && message.thinking) wire[echo] = message.thinking;
        }
        out.push(wire);
        break;
      }
      case "tool": {
        if (typeof message.content === "string") {
          out.push({ role: "tool", tool_call_id: message.toolCallId, content: message.content });
          break;
        }
        const text = message.content.filter((p): p is Extract<ContentPart, { type: "text" }> => p.type === "text").map((p) => p.text).join("\n");
        const media = message.content.filter((p) => p.type !== "text");
        out.push({
          role: "tool",
          tool_call_id: message.toolCallId,
          content: media.length > 0 ? `${text}${text ? "\n" : ""}[${media.length} attachment(s) follow in the next user message]` : text,
        });
        if (media.length > 0) {
          pendingMedia.push({ type: "text", text: `Attachments from tool call ${message.toolCallId}:` }, ...media.map(toWirePart));
        }
        break;
      }
    }
  }
  flushMedia();
  return out;
}

export function toWirePart(part: ContentPart): WireContentPart {
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text };
    case "image":
      return { type: "image_url", image_url: { url: part.url ?? `data:${part.mediaType};base64,${part.data ?? ""}` } };
    case "audio":
      return { type: "input_audio", input_audio: { data: part.data, format: audioFormat(part.mediaType) } };
  }
}

/** "audio/mpeg" → "mp3", "audio/x-wav" → "wav", else the subtype. */
export function audioFormat(mediaType: string): string {
  const subtype = (mediaType.split("/")[1] ?? mediaType).toLowerCase().replace(/^x-/, "").split(";")[0]!;
  if (subtype === "mpeg" || subtype === "mpeg3" || subtype === "mp3") return "mp3";
  if (subtype === "wave" || subtype === "vnd.wave") return "wav";
  return subtype;
}

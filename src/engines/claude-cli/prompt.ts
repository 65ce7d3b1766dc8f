import type { SDKUserMessage } from "@anthropic-ai/claude-agent-sdk";
import type { ContentPart, LlmMessage } from "../../llm/types.js";

/** Budget for the transcript that seeds an SDK session from earlier Veil history. */
const PRELUDE_MAX_CHARS = 60_000;

type UserContent = SDKUserMessage["message"]["content"];

/**
 * The session's history as text, for a run that starts a fresh SDK conversation on a
 * session that already has messages (first cc/ turn after openai turns, or a lost SDK
 * conversation).
 */
export function historyPrelude(history: readonly LlmMessage[]): string | null {
  const earlier = history.filter((m) => m.role !== "system");
  if (earlier.length === 0) return null;
  const lines: string[] = [];
  for (const message of earlier) {
    if (message.role === "user") lines.push(`[user] ${partsText(message.content)}`);
    else if (message.role === "assistant") {
      if (message.content) lines.push(`[assistant] ${message.content}`);
      for (const call of message.toolCalls ?? []) lines.push(`[assistant called ${call.name}] ${call.arguments}`);
    } else if (message.role === "tool") lines.push(`[tool result] ${partsText(message.content)}`);
  }
  let text = lines.join("\n");
  if (text.length > PRELUDE_MAX_CHARS) text = `…${text.slice(text.length - PRELUDE_MAX_CHARS)}`;
  return `Earlier conversation in this session (for context):\n${text}`;
}

/**
 * Veil's user messages as one SDK user message (several that arrived together go as one,
 * in order). `client_composed`: the CLI takes the text as written, so a message starting
 * with "/" is not run as a Claude Code command.
 */
export function toSdkUserMessage(messages: readonly LlmMessage[], prelude: string | null = null): SDKUserMessage {
  const blocks: Record<string, unknown>[] = prelude ? [{ type: "text", text: prelude }] : [];
  for (const message of messages) {
    if (message.role !== "user") continue;
    if (typeof message.content === "string") blocks.push({ type: "text", text: message.content });
    else blocks.push(...message.content.map(toBlock));
  }
  if (blocks.length === 0) blocks.push({ type: "text", text: "Continue." });
  return { type: "user", message: { role: "user", content: blocks as unknown as UserContent }, parent_tool_use_id: null, client_composed: true };
}

/** A Claude Code command (e.g. "/compact"), which must not be client-composed. */
export function sdkCommand(command: string): SDKUserMessage {
  return { type: "user", message: { role: "user", content: command }, parent_tool_use_id: null };
}

function toBlock(part: ContentPart): Record<string, unknown> {
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text };
    case "image":
      if (part.data) return { type: "image", source: { type: "base64", media_type: part.mediaType, data: part.data } };
      return { type: "image", source: { type: "url", url: part.url } };
    case "audio":
      return { type: "text", text: `[audio attachment (${part.mediaType}) omitted: the claude-cli engine does not take audio]` };
  }
}

function partsText(content: string | ContentPart[]): string {
  if (typeof content === "string") return content;
  return content.map((p) => (p.type === "text" ? p.text : `[${p.type}]`)).join(" ");
}

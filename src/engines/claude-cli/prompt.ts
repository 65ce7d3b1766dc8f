import type { SDKUserMessage } from "@anthropic-ai/claude-agent-sdk";
import type { ContentPart, LlmMessage } from "../../llm/types.js";

/** Budget for the transcript that seeds an SDK session from earlier Veil history. */
const PRELUDE_MAX_CHARS = 60_000;

type UserContent = SDKUserMessage["message"]["content"];
type UserMessage = Extract<LlmMessage, { role: "user" }>;

/** The trailing user messages of a run's history: what the SDK has not seen yet. */
export function newUserMessages(history: readonly LlmMessage[]): UserMessage[] {
  let start = history.length;
  while (start > 0 && history[start - 1]!.role === "user") start--;
  return history.slice(start) as UserMessage[];
}

/**
 * Earlier history as text, for a run that starts a fresh SDK session on a session that
 * already has messages (first cc/ turn after openai turns, or a lost SDK session).
 */
export function historyPrelude(history: readonly LlmMessage[]): string | null {
  const earlier = history.slice(0, history.length - newUserMessages(history).length).filter((m) => m.role !== "system");
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

export function toSdkUserMessage(content: string | ContentPart[], prelude: string | null = null): SDKUserMessage {
  const blocks = typeof content === "string" ? [{ type: "text" as const, text: content }] : content.map(toBlock);
  const withPrelude = prelude ? [{ type: "text" as const, text: prelude }, ...blocks] : blocks;
  return { type: "user", message: { role: "user", content: withPrelude as unknown as UserContent }, parent_tool_use_id: null };
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

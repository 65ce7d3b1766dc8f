import type { ContentPart, LlmMessage } from "../../llm/types.js";

/**
 * A cheap token estimate, used only where the provider's usage does not reach: messages
 * added since the last model call, and the relative sizes compaction compares.
 *
 * - text: ceil(UTF-8 bytes / 4). English and code run at 3.5–4.5 bytes per token in the
 *   common BPE vocabularies, so this is close for them; CJK text (3 bytes a character, about
 *   one token each) comes out at 0.75 tokens a character, a mild underestimate instead of
 *   chars / 4's 0.25.
 * - each message: +4 (role and separators); each tool call: name + arguments + 4.
 * - an image or audio part: 1,000 (providers charge 85–1,600 for an image).
 *
 * No tokenizer: the models we talk to use dozens of vocabularies and a wrong exact count is
 * no better than a good estimate. The threshold check prefers the provider's own
 * `prompt_tokens` (see contextTokens()).
 */
export const MESSAGE_OVERHEAD_TOKENS = 4;
export const MEDIA_PART_TOKENS = 1000;

export function estimateTextTokens(text: string | null | undefined): number {
  if (!text) return 0;
  return Math.ceil(Buffer.byteLength(text, "utf8") / 4);
}

function contentTokens(content: string | ContentPart[] | null): number {
  if (content === null) return 0;
  if (typeof content === "string") return estimateTextTokens(content);
  let total = 0;
  for (const part of content) total += part.type === "text" ? estimateTextTokens(part.text) : MEDIA_PART_TOKENS;
  return total;
}

/** Messages are immutable once built, so each one is measured once. */
const cache = new WeakMap<object, number>();

export function estimateMessageTokens(message: LlmMessage): number {
  const known = cache.get(message);
  if (known !== undefined) return known;
  let total = MESSAGE_OVERHEAD_TOKENS + contentTokens(message.content);
  if (message.role === "assistant") {
    total += estimateTextTokens(message.thinking);
    for (const call of message.toolCalls ?? []) total += MESSAGE_OVERHEAD_TOKENS + estimateTextTokens(call.name) + estimateTextTokens(call.arguments);
  }
  cache.set(message, total);
  return total;
}

export function estimateMessagesTokens(messages: readonly LlmMessage[]): number {
  let total = 0;
  for (const message of messages) total += estimateMessageTokens(message);
  return total;
}

/** What the provider said about the last call: its prompt covered the first `messageCount` messages. */
export interface KnownUsage {
  promptTokens: number;
  completionTokens: number;
  /** How many messages of the view the measured prompt held. */
  messageCount: number;
}

/**
 * The size of the next prompt: the provider's last prompt + completion when known, plus an
 * estimate of the messages added since (tool results, injected messages); a plain estimate
 * of the whole view otherwise. `messages` is the model's view, system prompt included.
 */
export function contextTokens(messages: readonly LlmMessage[], known?: KnownUsage | null): number {
  if (!known || known.messageCount > messages.length) return estimateMessagesTokens(messages);
  let total = known.promptTokens + known.completionTokens;
  // The assistant reply is counted by completionTokens; later messages are new.
  for (let i = known.messageCount + 1; i < messages.length; i++) total += estimateMessageTokens(messages[i]!);
  return total;
}

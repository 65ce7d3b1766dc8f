import type { AgentConfig, ModelEntry, ModelInfo, Settings } from "../config/types.js";
import { VeilError } from "../errors.js";
import { modelInfo, pickModelKey } from "../llm/models.js";
import type { ContentPart } from "../llm/types.js";
import type { SessionRow } from "../store/store.js";

/** One OpenAI content part a chat message may carry. */
export type ChatPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string; detail?: "auto" | "low" | "high" } };

/** A chat message: plain text, or OpenAI content parts. */
export type ChatContent = string | readonly ChatPart[];

const DATA_IMAGE_URL = /^data:(image\/[a-z0-9.+-]+);base64,[A-Za-z0-9+/=\s]*$/i;
const HTTP_URL = /^https?:\/\/\S+$/i;
const DETAILS = new Set(["auto", "low", "high"]);

/**
 * Checks an array of content parts, part by part, so the error names the index that is wrong.
 * Images are `data:image/…;base64,…` or http(s) URLs (fetched by the provider, not by Veil).
 */
export function validateChatParts(parts: readonly unknown[]): ChatPart[] {
  if (parts.length === 0) throw new VeilError("VALIDATION_ERROR", "message: an array of content parts needs at least one part");
  const out = parts.map((part, index) => validatePart(part, `message[${index}]`));
  if (!out.some((part) => part.type === "image_url" || part.text.trim() !== "")) {
    throw new VeilError("VALIDATION_ERROR", "message: the content parts hold neither text nor an image");
  }
  return out;
}

function validatePart(part: unknown, where: string): ChatPart {
  if (typeof part !== "object" || part === null || Array.isArray(part)) throw new VeilError("VALIDATION_ERROR", `${where}: a content part is an object with a "type"`);
  const { type } = part as { type?: unknown };
  if (type === "text") {
    const { text } = part as { text?: unknown };
    if (typeof text !== "string") throw new VeilError("VALIDATION_ERROR", `${where}: a text part needs "text" as a string`);
    return { type: "text", text };
  }
  if (type === "image_url") {
    const image = (part as { image_url?: unknown }).image_url;
    const url = typeof image === "object" && image !== null ? (image as { url?: unknown }).url : undefined;
    if (typeof url !== "string" || !(DATA_IMAGE_URL.test(url) || HTTP_URL.test(url))) {
      throw new VeilError("VALIDATION_ERROR", `${where}: an image_url part needs image_url.url as a data:image/…;base64,… URL or an http(s) URL`);
    }
    const detail = (image as { detail?: unknown }).detail;
    if (detail !== undefined && (typeof detail !== "string" || !DETAILS.has(detail))) {
      throw new VeilError("VALIDATION_ERROR", `${where}: image_url.detail is one of auto, low, high`);
    }
    return { type: "image_url", image_url: detail === undefined ? { url } : { url, detail: detail as "auto" } };
  }
  throw new VeilError("VALIDATION_ERROR", `${where}: unknown content part type ${JSON.stringify(type)} (expected "text" or "image_url")`);
}

/**
 * The stored shape of a user message: `content` is its text (the text parts joined by a blank
 * line, what search, summaries and text views use) and, for parts, `meta.parts` holds the
 * validated parts as sent, which is what the model is shown.
 */
export function toUserMessage(message: ChatContent, meta: Record<string, unknown> | undefined): { content: string; meta: Record<string, unknown> | null } {
  if (typeof message === "string") return { content: message, meta: meta ?? null };
  const parts = validateChatParts(message);
  return { content: textOfParts(parts), meta: { ...meta, parts } };
}

export function textOfParts(parts: readonly ChatPart[]): string {
  return parts.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n\n");
}

/** A stored user row's content for the model: its parts when it has them, else its text. */
export function userContentOfRow(row: { content: string | null; meta: Record<string, unknown> | null }): string | ContentPart[] {
  const parts = row.meta?.parts;
  if (!Array.isArray(parts)) return row.content ?? "";
  return (parts as ChatPart[]).map(toContentPart);
}

function toContentPart(part: ChatPart): ContentPart {
  if (part.type === "text") return { type: "text", text: part.text };
  const mediaType = DATA_IMAGE_URL.exec(part.image_url.url)?.[1] ?? "image/*";
  return { type: "image", mediaType, url: part.image_url.url };
}

/**
 * Images for a model that takes none are refused (400) rather than silently dropped: the
 * caller learns at once that this model cannot see what was sent. The model is the one the
 * turn would use: per-call, then the session's, the agent's, the default (models.json
 * `input_modalities`, text only when the key is not listed).
 */
export function assertModelTakesContent(
  message: ChatContent,
  turn: { perCallModel?: string; session: SessionRow; agent: AgentConfig | undefined; settings: Settings; models: Record<string, ModelEntry> },
): void {
  if (typeof message === "string" || !message.some((part) => (part as { type?: unknown }).type === "image_url")) return;
  const key = pickModelKey({ perCall: turn.perCallModel, session: turn.session.model, agent: turn.agent?.model, settings: turn.settings });
  const info: ModelInfo = modelInfo(key, turn.models);
  if (info.input_modalities.includes("image")) return;
  throw new VeilError(
    "VALIDATION_ERROR",
    `model "${key}" takes no image input (its input_modalities in models.json: ${JSON.stringify(info.input_modalities)}); send text only, or pick a model whose input_modalities include "image"`,
  );
}

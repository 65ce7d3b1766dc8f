import type { ContentPart } from "../llm/types.js";
import type { Attachment } from "./types.js";

/** A tool result as the model sees it this turn: text, plus media parts when there are attachments. */
export function toolResultContent(output: string, attachments: readonly Attachment[] | undefined): string | ContentPart[] {
  if (!attachments || attachments.length === 0) return output;
  const parts: ContentPart[] = [{ type: "text", text: output }];
  for (const a of attachments) {
    if (a.type === "image") parts.push({ type: "image", mediaType: a.media_type, data: a.data, url: a.url });
    else if (a.type === "audio" && a.data) parts.push({ type: "audio", mediaType: a.media_type, data: a.data });
  }
  return parts;
}

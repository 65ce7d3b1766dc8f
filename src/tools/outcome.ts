import type { Attachment, ToolOutcome } from "./types.js";

/** Accepts every shape a tool may return: string, { output }, { text, attachments }, { contentBlocks, displayText }. */
export function normaliseOutcome(raw: unknown): ToolOutcome {
  if (typeof raw === "string") return { output: raw };
  if (raw === undefined || raw === null) return { output: "(no output)" };
  if (typeof raw !== "object") return { output: String(raw) };
  const value = raw as Record<string, unknown>;
  if (typeof value.output === "string") return value as unknown as ToolOutcome;
  if (typeof value.text === "string") {
    return { output: value.text, attachments: Array.isArray(value.attachments) ? (value.attachments as Attachment[]) : undefined };
  }
  if (Array.isArray(value.contentBlocks)) {
    const attachments: Attachment[] = [];
    const texts: string[] = [];
    for (const block of value.contentBlocks as Record<string, unknown>[]) {
      if (block?.type === "text" && typeof block.text === "string") texts.push(block.text);
      else if (block?.type === "image_url" && typeof (block.image_url as { url?: string })?.url === "string") {
        attachments.push(dataUrlAttachment("image", (block.image_url as { url: string }).url));
      } else if (block?.type === "input_audio") {
        const audio = block.input_audio as { data?: string; format?: string };
        attachments.push({ type: "audio", media_type: `audio/${audio?.format ?? "wav"}`, data: audio?.data });
      }
    }
    const display = typeof value.displayText === "string" ? value.displayText : texts.join("\n");
    return { output: display, attachments };
  }
  return { output: JSON.stringify(raw) };
}

function dataUrlAttachment(type: "image", url: string): Attachment {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return match ? { type, media_type: match[1]!, data: match[2]! } : { type, media_type: "image/*", url };
}

import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Attachment } from "../../tools/types.js";
import type { CallToolResult } from "./mcp-server.js";

const EXTENSIONS: Record<string, string> = {
  "image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp",
  "audio/wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/ogg": "ogg",
};

/**
 * A Veil tool result as MCP content. MCP results reach the model as text only here,
 * so attachments are described in appended JSON (as for any tool returning attachments); inline
 * data is saved to a temp file whose path is given, so native `Read` can view an image.
 */
export async function toMcpResult(result: { call: { id: string }; output: string; attachments?: Attachment[]; success: boolean }, attachmentDir: string): Promise<CallToolResult> {
  let text = result.output;
  if (result.attachments && result.attachments.length > 0) {
    const described: Record<string, unknown>[] = [];
    for (const [index, attachment] of result.attachments.entries()) {
      const entry: Record<string, unknown> = { type: attachment.type, media_type: attachment.media_type };
      if (attachment.url) entry.url = attachment.url;
      if (attachment.data) {
        await mkdir(attachmentDir, { recursive: true });
        const file = join(attachmentDir, `${safeName(result.call.id)}-${index}.${EXTENSIONS[attachment.media_type] ?? "bin"}`);
        await writeFile(file, Buffer.from(attachment.data, "base64"));
        entry.path = file;
      }
      described.push(entry);
    }
    text = `${text}\n\n${JSON.stringify({ attachments: described })}`;
  }
  return { content: [{ type: "text", text }], ...(result.success ? {} : { isError: true }) };
}

function safeName(id: string): string {
  return id.replace(/[^A-Za-z0-9_-]/g, "_");
}

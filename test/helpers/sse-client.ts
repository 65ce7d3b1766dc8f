export interface SseMessage {
  id?: string;
  data?: any;
  comment?: string;
}

/**
 * Reads an SSE response until the stream ends or `until` matches a message.
 * With `waitForComment`, keeps reading until that comment was also seen.
 */
export async function readSse(
  res: Response,
  options: { until?: (message: SseMessage) => boolean; comments?: boolean; waitForComment?: string; max?: number } = {},
): Promise<SseMessage[]> {
  if (!res.body) throw new Error("response has no body");
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const out: SseMessage[] = [];
  let buffer = "";
  let matched = false;
  let commentSeen = options.waitForComment === undefined;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let index: number;
      while ((index = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, index);
        buffer = buffer.slice(index + 2);
        const message: SseMessage = {};
        const dataLines: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) message.comment = line.slice(1).trim();
          else if (line.startsWith("id:")) message.id = line.slice(3).trim();
          else if (line.startsWith("data:")) dataLines.push(line.slice(5).trimStart());
        }
        if (dataLines.length) message.data = JSON.parse(dataLines.join("\n"));
        if (message.comment !== undefined && !message.data) {
          if (message.comment.startsWith(options.waitForComment ?? "\u0000")) commentSeen = true;
          if (!options.comments) continue;
        }
        out.push(message);
        if (options.until?.(message)) matched = true;
        if ((matched || !options.until) && commentSeen && options.until) return out;
        if (options.max && out.length >= options.max) return out;
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return out;
}

/** One message of a text/event-stream. */
export interface SseMessage {
  id?: string;
  event?: string;
  data: string;
  retry?: number;
}

/**
 * Parses a text/event-stream body (the WHATWG rules: `data:` lines joined by newlines,
 * `id:`, `event:`, `retry:`, comment lines ignored, CRLF or LF). Works on any fetch body,
 * in browsers and Node.
 */
export async function* parseSse(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const onAbort = () => void reader.cancel().catch(() => undefined);
  signal?.addEventListener("abort", onAbort, { once: true });
  let buffer = "";
  let data: string[] = [];
  let message: Omit<SseMessage, "data"> = {};
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffer.search(/\r\n|\n|\r/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
        if (line === "") {
          if (data.length > 0) yield { ...message, data: data.join("\n") };
          data = [];
          message = {};
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") data.push(value);
        else if (field === "id") message.id = value;
        else if (field === "event") message.event = value;
        else if (field === "retry" && /^\d+$/.test(value)) message.retry = Number(value);
      }
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await reader.cancel().catch(() => undefined);
  }
}

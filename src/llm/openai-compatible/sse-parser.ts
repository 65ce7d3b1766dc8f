/**
 * Incremental Server-Sent Events parser: feed decoded text, get the `data` payload of
 * every complete event. Comments (`: keep-alive`, OpenRouter's `: OPENROUTER PROCESSING`),
 * `event:`/`id:`/`retry:` fields, CRLF line ends and multi-line data are handled.
 */
export class SseParser {
  private buffer = "";
  private data: string[] = [];

  /** Adds text; returns the data payloads of the events it completed. */
  push(text: string): string[] {
    this.buffer += text;
    const out: string[] = [];
    let start = 0;
    for (;;) {
      const nl = this.buffer.indexOf("\n", start);
      if (nl < 0) break;
      let line = this.buffer.slice(start, nl);
      start = nl + 1;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      this.line(line, out);
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  /** Flushes a final event that was not followed by a blank line. */
  end(): string[] {
    const out: string[] = [];
    if (this.buffer.length > 0) {
      this.line(this.buffer.endsWith("\r") ? this.buffer.slice(0, -1) : this.buffer, out);
      this.buffer = "";
    }
    this.line("", out);
    return out;
  }

  private line(line: string, out: string[]): void {
    if (line === "") {
      if (this.data.length > 0) out.push(this.data.join("\n"));
      this.data = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    if (field !== "data") return;
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    this.data.push(value);
  }
}

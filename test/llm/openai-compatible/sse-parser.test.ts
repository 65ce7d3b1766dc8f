import { describe, expect, it } from "vitest";
import { SseParser } from "../../../src/llm/openai-compatible/sse-parser.js";

describe("SseParser", () => {
  it("yields data payloads of complete events across arbitrary splits", () => {
    const parser = new SseParser();
    const text = 'data: {"a":1}\n\n: keep-alive comment\n\nevent: x\ndata: {"b":\ndata: 2}\n\ndata: [DONE]\n\n';
    const out: string[] = [];
    for (const ch of text) out.push(...parser.push(ch));
    expect(out).toEqual(['{"a":1}', '{"b":\n2}', "[DONE]"]);
  });

  it("handles CRLF line ends, no space after the colon, and a final event without a blank line", () => {
    const parser = new SseParser();
    expect(parser.push('data:{"x":1}\r\n\r\ndata: tail')).toEqual(['{"x":1}']);
    expect(parser.end()).toEqual(["tail"]);
  });

  it("ignores events that carry no data field", () => {
    const parser = new SseParser();
    expect(parser.push("id: 3\nretry: 10\n\n")).toEqual([]);
  });
});

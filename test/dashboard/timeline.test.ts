import { describe, expect, it } from "vitest";
import { Timeline, type Item } from "../../dashboard/src/timeline.js";

const S = "sess_a";
let seq = 0;
const ev = (type: string, fields: Record<string, unknown> = {}) => ({ type, sessionId: S, seq: ++seq, ...fields });

/** A compact picture of the items: what a reader of the chat would see. */
function shape(items: Item[]): string[] {
  return items.map((item) =>
    item.kind === "message" ? `${item.role}:${item.text}${item.thinking ? ` [thinking ${item.thinking}]` : ""}${item.streaming ? " …" : ""}` : item.kind === "tool" ? `tool ${item.name} ${item.state} ${JSON.stringify(item.output)}` : `notice ${item.text}`,
  );
}

function turn() {
  seq = 0;
  return [
    ev("chat.message", { role: "user", id: "m1", content: "run ls" }),
    ev("thinking.chunk", { content: "list " }),
    ev("thinking.chunk", { content: "files" }),
    ev("chat.chunk", { content: "Let me " }),
    ev("chat.chunk", { content: "look." }),
    ev("inference.tool", { name: "bash", toolCallId: "c1" }),
    ev("chat.message", { role: "assistant", id: "m2", content: "Let me look.", thinking_content: "list files", tool_calls: [{ id: "c1", name: "bash", arguments: '{"command":"ls"}' }] }),
    ev("tool.start", { toolName: "bash", toolCallId: "c1", toolInput: { command: "ls" } }),
    ev("tool.chunk", { toolName: "bash", toolCallId: "c1", chunk: "a.txt\n" }),
    ev("tool.end", { toolName: "bash", toolCallId: "c1", toolInput: { command: "ls" }, output: "a.txt\nb.txt", success: true, durationMs: 4 }),
    ev("chat.message", { role: "tool", id: "m3", tool_call_id: "c1", content: "a.txt\nb.txt" }),
    ev("chat.chunk", { content: "Two files." }),
    ev("chat.message", { role: "assistant", id: "m4", content: "Two files." }),
    ev("chat.done", { content: "Two files.", finishReason: "stop", stopReason: "stop" }),
  ];
}

const EXPECTED = ["user:run ls", "assistant:Let me look. [thinking list files]", 'tool bash done "a.txt\\nb.txt"', "assistant:Two files."];

describe("dashboard timeline (events → chat items)", () => {
  it("builds one bubble per assistant message, the text streamed before a tool call included", () => {
    const timeline = new Timeline();
    const events = turn();
    for (const event of events.slice(0, 9)) timeline.apply(event);
    expect(shape(timeline.items)).toEqual(["user:run ls", "assistant:Let me look. [thinking list files]", 'tool bash running "a.txt\\n"']);
    for (const event of events.slice(9)) timeline.apply(event);
    expect(shape(timeline.items)).toEqual(EXPECTED);
    expect(timeline.lastSeq).toBe(events.length);
  });

  it("applying the same events again (a replay after reconnect) duplicates nothing", () => {
    const timeline = new Timeline();
    const events = turn();
    for (const event of events) timeline.apply(event);
    for (const event of events) timeline.apply(event);
    expect(shape(timeline.items)).toEqual(EXPECTED);
  });

  it("stored messages give the same picture as the events", () => {
    const timeline = new Timeline();
    timeline.loadMessages([
      { id: "m1", seq: 1, role: "user", content: "run ls" },
      { id: "m2", seq: 2, role: "assistant", content: "Let me look.", thinking: "list files", tool_calls: [{ id: "c1", name: "bash", arguments: '{"command":"ls"}' }] },
      { id: "m3", seq: 3, role: "tool", content: "a.txt\nb.txt", tool_call_id: "c1" },
      { id: "m4", seq: 4, role: "assistant", content: "Two files." },
    ]);
    expect(shape(timeline.items)).toEqual(EXPECTED);
    const tool = timeline.items[2]!;
    expect(tool.kind === "tool" && tool.input).toEqual({ command: "ls" });
  });

  it("a cancelled run marks its running tool failed and says so; an error is shown with its code", () => {
    const timeline = new Timeline();
    seq = 0;
    timeline.apply(ev("tool.start", { toolName: "bash", toolCallId: "c9", toolInput: { command: "sleep 60" } }));
    timeline.apply(ev("tool.progress", { toolName: "bash", toolCallId: "c9", toolUseId: "c9", elapsed: 6 }));
    const running = timeline.items[0]!;
    expect(running.kind === "tool" && running.elapsedMs).toBe(6000);
    timeline.apply(ev("chat.done", { stopReason: "cancelled", finishReason: "cancelled" }));
    timeline.apply(ev("chat.done", { stopReason: "error", error: { code: "LLM_ERROR", message: "fake: 500" } }));
    expect(shape(timeline.items)).toEqual(['tool bash error "(interrupted)"', "notice Run cancelled", "notice LLM_ERROR: fake: 500"]);
  });

  it("user images from content parts are kept as data: URLs only", () => {
    const timeline = new Timeline();
    seq = 0;
    timeline.apply(ev("chat.message", { role: "user", id: "u1", content: [{ type: "text", text: "look" }, { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }, { type: "image_url", image_url: { url: "https://evil.example/x.png" } }] }));
    const item = timeline.items[0]!;
    expect(item.kind === "message" && [item.text, item.images]).toEqual(["look", ["data:image/png;base64,AAAA"]]);
  });
});

import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { reply } from "../helpers/fake-llm.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

describe("runs as event streams", () => {
  it("never runs a tool call from a response cut off by max_tokens, and the next request is valid", async () => {
    h = await createRuntimeHarness();
    h.llm.enqueue(reply().rawToolCall("bash", '{"command":"echo $(').finish("length").stop());
    h.llm.enqueue(reply().text("retrying smaller").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const result = await (await h.runtime.sessions.send(session.id, "go")).result;
    expect(result.content).toBe("retrying smaller");
    const starts = h.events.filter((e) => e.type === "tool.start");
    const ends = h.events.filter((e) => e.type === "tool.end");
    expect(starts).toHaveLength(1);
    expect(ends[0]).toMatchObject({ toolName: "bash", success: false });
    expect((ends[0] as { output: string }).output).toMatch(/^Error: OUTPUT_TRUNCATED — .*was not run/);
    const calls = await h.runtime.store.listToolCalls(session.id);
    expect(calls.map((c) => [c.name, c.state, c.arguments])).toEqual([["bash", "error", '{"command":"echo $(']]);
    const next = h.llm.completionRequests[1]!.body.messages;
    const assistant = next.find((m: { role: string }) => m.role === "assistant");
    const tool = next.find((m: { role: string }) => m.role === "tool");
    expect(tool.tool_call_id).toBe(assistant.tool_calls[0].id);
  });

  it("tool.end carries the tool's details; the stored log has every non-delta event with dense seq", async () => {
    h = await createRuntimeHarness({ files: { "a.txt": "hello\n" } });
    h.llm.enqueue(reply().tool("glob", { pattern: "*.txt" }).stop());
    h.llm.enqueue(reply().text("done").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "list")).result;
    const end = h.events.find((e) => e.type === "tool.end") as { details: { total: number; engine: string } };
    expect(end.details.total).toBe(1);
    const stored = await h.runtime.store.listEvents(session.id);
    expect(stored.map((e) => e.seq)).toEqual(stored.map((_, i) => i + 1));
    expect(stored.map((e) => e.type)).toEqual(h.events.filter((e) => e.sessionId === session.id && e.seq !== undefined).map((e) => e.type));
    expect(stored.some((e) => e.type === "chat.chunk" || e.type === "tool.chunk")).toBe(false);
    expect(JSON.parse(stored.find((e) => e.type === "tool.end")!.data).details.total).toBe(1);
  });

  it("cuts long strings of a tool's input in tool.start and tool.end; the tool, the stored message and the next request have them whole", async () => {
    h = await createRuntimeHarness();
    const content = "z".repeat(100_000);
    h.llm.enqueue(reply().tool("write_file", { file: "big.txt", content }, { fragments: 20 }).stop());
    h.llm.enqueue(reply().text("written").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "write it")).result;
    expect(readFileSync(h.ws.path("big.txt"), "utf8")).toBe(content);
    const cut = `${"z".repeat(30_000)}… [cut in this event: 100000 chars]`;
    for (const type of ["tool.start", "tool.end"]) {
      expect((h.events.find((e) => e.type === type) as { toolInput: unknown }).toolInput, type).toEqual({ file: "big.txt", content: cut });
      const stored = (await h.runtime.store.listEvents(session.id)).find((e) => e.type === type)!;
      expect(JSON.parse(stored.data).toolInput.content).toBe(cut);
    }
    const [call] = await h.runtime.store.listToolCalls(session.id);
    expect(JSON.parse(call!.arguments).content).toBe(content);
    const assistant = h.llm.completionRequests[1]!.body.messages.find((m: { role: string }) => m.role === "assistant");
    expect(JSON.parse(assistant.tool_calls[0].function.arguments).content).toBe(content);
  });

  it("sends tool.progress every 5 s while a tool runs longer", async () => {
    const clock = new ManualClock();
    h = await createRuntimeHarness({ clock });
    h.llm.enqueue(reply().tool("sleep", { seconds: 12 }).stop());
    h.llm.enqueue(reply().text("rested").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const started = new Promise<void>((resolve) => {
      const off = h.runtime.bus.subscribe({ sessionId: session.id, types: ["tool.start"] }, () => {
        off();
        resolve();
      });
    });
    const receipt = await h.runtime.sessions.send(session.id, "rest");
    await started;
    // Let the executor reach the tool's own timer before time moves.
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    await clock.advance(13_000);
    expect((await receipt.result).content).toBe("rested");
    const progress = h.events.filter((e) => e.type === "tool.progress");
    expect(progress.map((e) => (e as { elapsed: number }).elapsed)).toEqual([5, 10]);
    expect(progress[0]).toMatchObject({ toolName: "sleep", toolCallId: expect.any(String) });
    expect((progress[0] as { toolUseId: string }).toolUseId).toBe((progress[0] as { toolCallId: string }).toolCallId);
  });
});

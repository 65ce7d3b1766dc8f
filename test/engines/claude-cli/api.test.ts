/**
 * CLAUDE ENGINE TESTS (real Claude Agent SDK + `claude` binary against the fake Anthropic
 * server; each turn starts the binary, about a second): the engine over Veil's public HTTP API.
 */
import { afterEach, describe, expect, it } from "vitest";
import { hang, message } from "../../helpers/fake-anthropic.js";
import { readSse } from "../../helpers/sse-client.js";
import { childClaudePids, createEngineHarness, isAlive, type EngineHarness } from "./harness.js";

let cc: EngineHarness | undefined;
afterEach(async () => {
  await cc?.close();
  cc = undefined;
});

async function ccHarness() {
  cc = await createEngineHarness();
  return { h: cc.harness, api: cc.api };
}

describe("claude-cli engine over HTTP", () => {
  it("a cc/ session streams the engine-blind events with Veil's tool names, stores rows, and a second chat continues the SDK conversation", async () => {
    const { h, api } = await ccHarness();
    const server = await h.serve();
    h.ws.write("notes.txt", "alpha\n");
    api.enqueue(
      message().thinking("hm", { pieces: 1 }).text("Reading.", 1).tool("mcp__veil__bash", { command: "cat notes.txt" }).usage({ input_tokens: 20, cache_read_input_tokens: 500, cache_creation_input_tokens: 30, output_tokens: 10 }).stop(),
      message().text("It says alpha.", 1).usage({ input_tokens: 40, cache_read_input_tokens: 500, output_tokens: 6 }).stop(),
    );
    const created = await (await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "default", model: "cc/claude-test" }) })).json();
    const res = await server.fetch(`/sessions/${created.id}/chat`, { method: "POST", body: JSON.stringify({ message: "what is in notes.txt?", stream: true }) });
    const events = (await readSse(res, { until: (m) => m.data?.type === "chat.done" })).map((m) => m.data).filter(Boolean);
    const types = events.map((e) => e.type);
    expect(types).toContain("inference.tool");
    expect(types.indexOf("inference.tool")).toBeLessThan(types.indexOf("tool.start"));
    expect(types).toContain("thinking.chunk");
    const end = events.find((e) => e.type === "tool.end");
    expect(end).toMatchObject({ toolName: "bash", toolInput: { command: "cat notes.txt" }, success: true });
    expect(typeof end.durationMs).toBe("number");
    expect("details" in end).toBe(true);
    const toolMessage = events.find((e) => e.type === "chat.message" && e.role === "tool");
    expect(toolMessage).toMatchObject({ tool_call_id: end.toolCallId });
    const assistants = events.filter((e) => e.type === "chat.message" && e.role === "assistant");
    expect(assistants.map((a) => a.finishReason)).toEqual(["tool_calls", "stop"]);
    expect(assistants[0].tokenUsage).toMatchObject({ prompt_tokens: 550, cached_tokens: 500, cache_creation_tokens: 30, completion_tokens: 10 });
    expect(assistants[0].tool_calls[0].name).toBe("bash");
    const done = events.at(-1);
    expect(done).toMatchObject({ type: "chat.done", stopReason: "stop", content: "It says alpha." });

    const row = await (await server.fetch(`/sessions/${created.id}`)).json();
    expect(row.context_size).toBe(540 + 6);
    const stored = await (await server.fetch(`/sessions/${created.id}/messages`)).json();
    expect(stored.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);

    api.enqueue(message().text("Still alpha.").stop());
    const second = await (await server.fetch(`/sessions/${created.id}/chat`, { method: "POST", body: JSON.stringify({ message: "and again?" }) })).json();
    expect(second.content).toBe("Still alpha.");
    const resumed = JSON.stringify(api.messageRequests.at(-1)!.body.messages);
    expect(resumed).toContain("what is in notes.txt?");
    expect(resumed).toContain("and again?");
  });

  it("closing a running cc/ session ends its claude process within 5 s", async () => {
    const { h, api } = await ccHarness();
    const server = await h.serve();
    api.enqueue(hang());
    const created = await (await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "default", model: "cc/claude-test" }) })).json();
    const chat = server.fetch(`/sessions/${created.id}/chat`, { method: "POST", body: JSON.stringify({ message: "hi" }) });
    await api.waitForRequests(1);
    const pids = childClaudePids();
    expect(pids.length).toBeGreaterThan(0);
    const closed = await server.fetch(`/sessions/${created.id}`, { method: "DELETE" });
    expect(closed.status).toBe(200);
    await chat.catch(() => undefined);
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
  });
});



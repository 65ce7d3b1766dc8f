/**
 * CLAUDE ENGINE TESTS (real Claude Agent SDK + `claude` binary against the fake Anthropic
 * server; each turn starts the binary, about a second).
 */
import { afterEach, describe, expect, it } from "vitest";
import { message, apiError } from "../../helpers/fake-anthropic.js";
import { createEngineHarness, type EngineHarness } from "./harness.js";

let h: EngineHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("claude-cli engine: one turn", () => {
  it("streams thinking, text and a Veil tool call split across input_json_delta chunks, with Veil names and mapped usage", async () => {
    h = await createEngineHarness({ files: { "notes.txt": "alpha\nbeta\n" } });
    h.api.enqueue(
      message().thinking("let me look").text("Listing.").tool("mcp__veil__bash", { command: "cat notes.txt" }, { fragments: 4 })
        .usage({ input_tokens: 40, cache_read_input_tokens: 1000, cache_creation_input_tokens: 60, output_tokens: 12 }).stop(),
      message().text("The file has alpha and beta.").usage({ input_tokens: 50, output_tokens: 9 }).stop(),
    );
    const outcome = await h.turn("what is in notes.txt?");
    expect(outcome.error).toBeUndefined();
    expect(outcome.stopReason).toBe("stop");
    const types = outcome.events.map((e) => e.type);
    // The Veil tool call is part of the engine's stream: its start, stored state and result.
    expect(types.filter((t) => t !== "text_delta" && t !== "thinking_delta")).toEqual([
      "model_call_started", "tool_call_started", "model_usage", "assistant_message", "tool_started", "tool_state", "tool_finished", "model_call_started", "model_usage", "assistant_message", "run_ended",
    ]);
    const first = outcome.events.find((e) => e.type === "assistant_message")!;
    expect(first).toMatchObject({ finishReason: "tool_calls", final: false });
    if (first.type !== "assistant_message") throw new Error("unreachable");
    expect(first.message.thinking).toBe("let me look");
    expect(first.message.toolCalls[0]).toMatchObject({ name: "bash" });
    expect(JSON.parse(first.message.toolCalls[0]!.arguments)).toEqual({ command: "cat notes.txt" });
    expect(first.usage).toMatchObject({ prompt_tokens: 1100, completion_tokens: 12, cached_tokens: 1000, cache_creation_tokens: 60, total_tokens: 1112 });

    const wire = h.wire.map((e) => e.type);
    expect(wire.indexOf("inference.tool")).toBeLessThan(wire.indexOf("tool.start"));
    const toolEnd = h.wire.find((e) => e.type === "tool.end")!;
    expect(toolEnd).toMatchObject({ toolName: "bash", success: true, toolInput: { command: "cat notes.txt" } });
    expect((toolEnd as { output: string }).output).toContain("alpha");
    expect(h.wire.filter((e) => e.type === "thinking.chunk").map((e) => (e as { content: string }).content).join("")).toBe("let me look");

    // The model got Veil's tool result back as the tool_result of its call.
    const second = h.api.messageRequests[1]!.body;
    const lastUser = second.messages.at(-1);
    expect(JSON.stringify(lastUser.content)).toContain("alpha");
    const tools: string[] = h.api.messageRequests[0]!.body.tools.map((t: { name: string }) => t.name);
    expect(tools).toContain("mcp__veil__bash");
    expect(tools).toContain("Read");
    expect(tools).not.toContain("Bash");
    const row = await h.store.getSession(h.sessionId);
    expect(row?.context_size).toBe(50 + 9);
    const rows = await h.store.listMessages(h.sessionId);
    expect(rows.map((r) => r.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(rows[1]!.tool_calls?.[0]?.name).toBe("bash");
  });

  it("maps max_tokens to length and keeps the SDK session across turns", async () => {
    h = await createEngineHarness();
    h.api.enqueue(message().text("cut").stop("max_tokens"));
    const first = await h.turn("one");
    expect(first.error).toBeUndefined();
    expect(first.stopReason).toBe("length");
    const state = await h.store.getSessionMeta<{ sdkSessionId: string }>(h.sessionId, "engineState");
    expect(state?.sdkSessionId).toMatch(/^[0-9a-f-]{36}$/);
    h.api.enqueue(message().text("second answer").stop());
    const second = await h.turn("two");
    expect(second.stopReason).toBe("stop");
    const messages = h.api.messageRequests.at(-1)!.body.messages;
    expect(JSON.stringify(messages)).toContain("two");
    expect(JSON.stringify(messages)).toContain("one");
    expect(JSON.stringify(messages)).toContain("cut");
  });

  it("fails with a clear error on a 401 and leaves no claude process", async () => {
    h = await createEngineHarness();
    h.api.respond(() => apiError(401, { message: "invalid x-api-key" }));
    const outcome = await h.turn("hi");
    expect(outcome.stopReason).toBe("error");
    expect(outcome.error?.code).toBe("LLM_ERROR");
    expect(outcome.error?.message).toMatch(/401|key/i);
    expect(h.engine.livePids()).toEqual([]);
  });
});

describe("claude-cli engine: a lost SDK conversation", () => {
  it("starts a new one seeded with the session's history when the stored one cannot be resumed", async () => {
    h = await createEngineHarness();
    h.api.enqueue(message().text("first reply").stop());
    await h.turn("remember the word kumquat");
    await h.store.setSessionMeta(h.sessionId, "engineState", { sdkSessionId: "3f1c2a4e-1111-4222-8333-944455556666" });
    h.api.enqueue(message().text("kumquat").stop());
    const outcome = await h.turn("which word?");
    expect(outcome.error).toBeUndefined();
    expect(outcome.stopReason).toBe("stop");
    const sent = JSON.stringify(h.api.messageRequests.at(-1)!.body.messages);
    expect(sent).toContain("Earlier conversation in this session");
    expect(sent).toContain("remember the word kumquat");
    const state = await h.store.getSessionMeta<{ sdkSessionId: string }>(h.sessionId, "engineState");
    expect(state?.sdkSessionId).not.toBe("3f1c2a4e-1111-4222-8333-944455556666");
  });
});

describe("claude-cli engine: compaction and verbatim input", () => {
  it("compacts the SDK conversation with its own /compact once context_size reaches autoThreshold of the window; user text starting with / is not a command", async () => {
    h = await createEngineHarness({ models: { "cc/claude-test": { context_window: 10_000 } }, settings: { defaultCompaction: { autoThreshold: 0.5 } } as never });
    h.api.respond((request) => {
      const text = JSON.stringify(request.body.messages);
      if (text.includes("<summary>")) return message().text("<analysis>a</analysis><summary>The user said /clear please.</summary>").usage({ input_tokens: 300, output_tokens: 40 }).stop();
      return message().text("noted").usage({ input_tokens: 6000, output_tokens: 20 }).stop();
    });
    const first = await h.turn("/clear please");
    expect(first.stopReason).toBe("stop");
    const sentFirst = JSON.stringify(h.api.messageRequests[0]!.body.messages);
    expect(sentFirst).toContain("/clear please");
    const summarizing = h.api.messageRequests.filter((r) => JSON.stringify(r.body.messages).includes("<summary>"));
    expect(summarizing.length).toBeGreaterThan(0);
    expect(h.log.entries.some((e) => e.message.includes("compacted its conversation"))).toBe(true);
    const compacted = h.wire.filter((e) => e.type === "session.compacted");
    expect(compacted).toHaveLength(1);
    expect(compacted[0]).toMatchObject({ reason: "auto", tokensBefore: 6020, summaryMessageId: null });
    const after = (compacted[0] as { tokensAfter: number }).tokensAfter;
    expect(after).toBeGreaterThan(0);
    expect(after).toBeLessThan(6020);

    const second = await h.turn("and now?");
    expect(second.stopReason).toBe("stop");
    const sentSecond = JSON.stringify(h.api.messageRequests.at(-1)!.body.messages);
    expect(sentSecond).toContain("The user said /clear please.");
    expect(sentSecond).toContain("and now?");
  });
});

describe("claude-cli engine: the agent's compaction threshold, max output tokens, the Stop hook", () => {
  it("compacts at the agent's autoThreshold over settings and caps each answer at the catalogue's max_output_tokens", async () => {
    h = await createEngineHarness({
      models: { "cc/claude-test": { context_window: 10_000, max_output_tokens: 1234 } },
      settings: { defaultCompaction: { autoThreshold: 0.9 } } as never,
      agent: { compaction: { autoThreshold: 0.3 } },
    });
    h.api.respond((request) => {
      if (JSON.stringify(request.body.messages).includes("<summary>")) return message().text("<summary>short</summary>").usage({ input_tokens: 300, output_tokens: 30 }).stop();
      return message().text("noted").usage({ input_tokens: 4000, output_tokens: 20 }).stop();
    });
    const outcome = await h.turn("hello");
    expect(outcome.stopReason).toBe("stop");
    // 4,020 tokens is past the agent's 30 % of 10,000 but not the settings' 90 %.
    expect(h.wire.filter((e) => e.type === "session.compacted")).toHaveLength(1);
    expect(h.api.messageRequests[0]!.body.max_tokens).toBe(1234);
  });

  it("runs the Stop hook at the end of the run; exit 2 continues it once with the hook's reason", async () => {
    h = await createEngineHarness({
      files: { ".veil/hooks/stop.sh": 'input=$(cat)\ncase "$input" in *\'"stop_hook_active":false\'*) echo "run the tests before you finish" >&2; exit 2;; esac\nexit 0\n' },
      settings: { hooks: { Stop: [{ hooks: [{ type: "command", command: "sh .veil/hooks/stop.sh" }] }] } } as never,
    });
    h.api.enqueue(message().text("done").stop(), message().text("tests pass, done").stop());
    const outcome = await h.turn("fix it");
    expect(outcome.stopReason).toBe("stop");
    expect(h.api.messageRequests).toHaveLength(2);
    expect(JSON.stringify(h.api.messageRequests[1]!.body.messages.at(-1))).toContain("run the tests before you finish");
    const finals = outcome.events.filter((e) => e.type === "assistant_message").map((e) => (e as { final: boolean }).final);
    expect(finals).toEqual([false, true]);
    const rows = await h.store.listMessages(h.sessionId);
    expect(rows.map((r) => [r.role, r.content])).toEqual([
      ["user", "fix it"],
      ["assistant", "done"],
      ["user", "run the tests before you finish"],
      ["assistant", "tests pass, done"],
    ]);
    expect(h.wire.filter((e) => e.type === "chat.done")).toHaveLength(1);
  });
});

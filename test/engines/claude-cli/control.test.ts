/**
 * CLAUDE ENGINE TESTS (real Claude Agent SDK + `claude` binary against the fake Anthropic
 * server): cancel, budgets, mid-run injection, reasoning, and failing starts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { hang, message } from "../../helpers/fake-anthropic.js";
import { createEngineHarness, isAlive, type EngineHarness } from "./harness.js";

let h: EngineHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("claude-cli engine: control", () => {
  it("cancel mid-stream interrupts the SDK, keeps the streamed text and leaves no claude process", async () => {
    h = await createEngineHarness();
    const never = new Promise(() => {});
    h.api.enqueue(message().text("partial answer", 1).waitFor(never).text("never sent").stop());
    const seen: number[] = [];
    const outcome = await h.turn("go", {
      onEvent: (e) => {
        seen.push(...h!.engine.livePids());
        if (e.type === "text_delta") void h!.runtime.sessions.cancel(h!.sessionId);
      },
    });
    expect(outcome.stopReason).toBe("cancelled");
    const partial = outcome.events.find((e) => e.type === "assistant_message");
    expect(partial).toMatchObject({ finishReason: "cancelled", message: { content: "partial answer" } });
    expect(seen.length).toBeGreaterThan(0);
    expect(h.engine.livePids()).toEqual([]);
    for (const pid of new Set(seen)) expect(isAlive(pid)).toBe(false);
  });

  it("stops at max_iterations before the next model call, and at the token budget", async () => {
    h = await createEngineHarness();
    h.api.enqueue(message().tool("mcp__veil__log_write", { message: "step" }).usage({ input_tokens: 10, output_tokens: 5 }).stop());
    const outcome = await h.turn("loop", { budget: { max_iterations: 1 } });
    expect(outcome.stopReason).toBe("max_iterations");
    expect(outcome.events.filter((e) => e.type === "assistant_message")).toHaveLength(1);
    expect(h.wire.some((e) => e.type === "tool.end")).toBe(true);

    h.api.enqueue(message().tool("mcp__veil__log_write", { message: "again" }).usage({ input_tokens: 5000, output_tokens: 5 }).stop());
    const second = await h.turn("more", { budget: { max_tokens: 1000 } });
    expect(second.stopReason).toBe("max_tokens");
  });

  it("buffers a message injected during a tool call and delivers it after the tool result, as a new SDK turn", async () => {
    h = await createEngineHarness();
    h.api.enqueue(message().tool("mcp__veil__sleep", { seconds: 1 }).stop(), message().text("first done").stop(), message().text("got the second").stop());
    const outcome = await h.turn("start", {
      onEvent: (e) => {
        if (e.type === "assistant_message" && e.message.toolCalls.length > 0) {
          h!.inject("second message");
        }
      },
    });
    expect(outcome.stopReason).toBe("stop");
    expect(h.api.messageRequests).toHaveLength(3);
    const afterTool = JSON.stringify(h.api.messageRequests[1]!.body.messages);
    expect(afterTool).not.toContain("second message");
    const last = h.api.messageRequests[2]!.body.messages;
    const lastText = JSON.stringify(last);
    expect(lastText.indexOf("tool_result")).toBeLessThan(lastText.indexOf("second message"));
    const finals = outcome.events.filter((e) => e.type === "assistant_message").map((e) => (e as { final: boolean }).final);
    expect(finals.at(-1)).toBe(true);
  });

  it("maps reasoning effort to a thinking budget", async () => {
    h = await createEngineHarness({ agent: { reasoning: { effort: "low" } }, modelKey: "cc/claude-sonnet-4-5" });
    h.api.enqueue(message().thinking("short thought").text("ok").stop());
    const outcome = await h.turn("think a little");
    expect(outcome.stopReason).toBe("stop");
    expect(h.api.messageRequests[0]!.body.thinking).toMatchObject({ type: "enabled", budget_tokens: 4096 });
    expect(outcome.events.find((e) => e.type === "assistant_message")).toMatchObject({ message: { thinking: "short thought", content: "ok" } });
  });
});

describe("claude-cli engine: failing starts", () => {
  it("names the install command when the SDK is not installed", async () => {
    h = await createEngineHarness({ importSdk: () => import("@anthropic-ai/claude-agent-sdk-not-installed" as string) });
    const outcome = await h.turn("hi");
    expect(outcome.stopReason).toBe("error");
    expect(outcome.error?.code).toBe("CONFIG_ERROR");
    expect(outcome.error?.message).toContain("npm i @anthropic-ai/claude-agent-sdk");
  });

  it("refuses a missing executable and an unset apiKeyEnv with CONFIG_ERROR, at once", async () => {
    h = await createEngineHarness({ claudeCli: { executable: "/nonexistent/claude" } });
    const missing = await h.turn("hi");
    expect(missing.error).toMatchObject({ code: "CONFIG_ERROR" });
    expect(missing.error?.message).toContain("/nonexistent/claude");
    await h.close();
    h = await createEngineHarness({ claudeCli: { apiKey: undefined, apiKeyEnv: "VEIL_TEST_UNSET_ANTHROPIC_KEY" } });
    const unset = await h.turn("hi");
    expect(unset.error).toMatchObject({ code: "CONFIG_ERROR" });
    expect(unset.error?.message).toContain("VEIL_TEST_UNSET_ANTHROPIC_KEY");
    expect(h.api.messageRequests).toHaveLength(0);
  });

  it("fails quickly with an error naming an unreachable base URL", async () => {
    h = await createEngineHarness({ claudeCli: { baseUrl: "http://127.0.0.1:9" } });
    const outcome = await h.turn("hi");
    expect(outcome.stopReason).toBe("error");
    expect(outcome.error?.message).toContain("127.0.0.1:9");
    expect(outcome.error?.message).toMatch(/refused|ECONNREFUSED|connect/i);
    expect(h.engine.livePids()).toEqual([]);
  });

  it("reports a crash of the claude child as an error and leaves nothing running", async () => {
    h = await createEngineHarness();
    h.api.enqueue(hang());
    const running = h.turn("hi");
    await h.api.waitForRequests(1);
    const pids = h.engine.livePids();
    expect(pids.length).toBe(1);
    process.kill(pids[0]!, "SIGKILL");
    const outcome = await running;
    expect(outcome.stopReason).toBe("error");
    expect(outcome.error?.message).toMatch(/claude/i);
    expect(h.engine.livePids()).toEqual([]);
    expect(isAlive(pids[0]!)).toBe(false);
  });
});

/**
 * CLAUDE ENGINE TESTS: the claude-cli engine's turns are traced like the openai engine's
 * (real Claude Agent SDK against the fake Anthropic server, spans to a loopback collector).
 */
import { afterEach, describe, expect, it } from "vitest";
import { message } from "../../helpers/fake-anthropic.js";
import { startOtlpCollector, type OtlpCollector } from "../../helpers/otlp-collector.js";
import { createEngineHarness, type EngineHarness } from "./harness.js";

let h: EngineHarness | undefined;
let collector: OtlpCollector | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  await collector?.close();
  collector = undefined;
});

describe("claude-cli engine: traces", () => {
  // A real Claude Agent SDK turn: ~18 s on a busy 2-core machine, over half the default 30 s budget.
  it("sends invoke_agent, chat and execute_tool spans for a cc/ turn, native and Veil tools alike", async () => {
    collector = await startOtlpCollector();
    h = await createEngineHarness({
      files: { "notes.txt": "traced\n" },
      claudeCli: { nativeTools: ["Read"] },
      models: { "cc/claude-test": { cost: { input: 3, output: 15 } } },
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_BSP_SCHEDULE_DELAY: "20" },
    });
    h.api.enqueue(message().tool("Read", { file_path: h.ws.path("notes.txt") }).tool("mcp__veil__glob", { pattern: "*.txt" }).stop(), message().text("read").stop());
    const outcome = await h.turn("read the notes");
    expect(outcome.error).toBeUndefined();

    const spans = await collector.waitFor((all) => all.some((s) => s.name === "invoke_agent default"));
    const turn = spans.find((s) => s.name === "invoke_agent default")!;
    expect(turn.attributes).toMatchObject({ "gen_ai.request.model": "cc/claude-test", "veil.engine": "claude-cli", "veil.session_id": h.sessionId });
    const chats = spans.filter((s) => s.name === "chat cc/claude-test");
    expect(chats).toHaveLength(2);
    for (const chat of chats) {
      expect(chat.parentSpanId).toBe(turn.spanId);
      expect(chat.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
      expect(chat.attributes["veil.cost_usd"]).toBeGreaterThan(0);
    }
    const tools = spans.filter((s) => s.name.startsWith("execute_tool ")).map((s) => [s.name, s.parentSpanId === turn.spanId, s.attributes["veil.session_id"]]);
    expect(tools.sort()).toEqual([
      ["execute_tool Read", true, h.sessionId],
      ["execute_tool glob", true, h.sessionId],
    ]);
  }, 60_000);
});

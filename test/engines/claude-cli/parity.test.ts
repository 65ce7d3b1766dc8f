/**
 * CLAUDE ENGINE TESTS (real Claude Agent SDK + `claude` binary against the fake Anthropic
 * server): engine-blind events. The same scripted work through the openai engine (fake
 * OpenAI-compatible LLM) and the claude-cli engine (fake Anthropic) gives the same event
 * types in the same order, with the same payload fields.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { VeilEvent } from "../../../src/base/events.js";
import { reply } from "../../helpers/fake-llm.js";
import { message } from "../../helpers/fake-anthropic.js";
import { createRuntimeHarness, type RuntimeHarness } from "../../helpers/runtime.js";
import { createEngineHarness, type EngineHarness } from "./harness.js";

let openai: RuntimeHarness | undefined;
let cc: EngineHarness | undefined;
afterEach(async () => {
  await openai?.close();
  await cc?.close();
  openai = cc = undefined;
});

/** Fields that differ by nature between two runs (ids, times, counters), not by engine. */
const VOLATILE = new Set(["seq", "gseq", "ts", "id", "session_id", "sessionId", "created_at", "toolCallId", "tool_call_id", "messageId", "durationMs", "elapsed"]);

function shape(events: VeilEvent[]): { type: string; fields: string[] }[] {
  return events.map((e) => ({ type: e.type, fields: Object.keys(e).filter((k) => !VOLATILE.has(k)).sort() }));
}

async function sessionEvents(events: VeilEvent[], sessionId: string): Promise<VeilEvent[]> {
  return events.filter((e) => e.sessionId === sessionId);
}

describe("engine parity: openai vs claude-cli", () => {
  it("thinking, text, a tool call and a final answer produce the same events in the same order with the same fields", async () => {
    openai = await createRuntimeHarness();
    openai.llm.enqueue(
      reply().thinking("Let me log it.").text("Logging.").tool("log_write", { message: "step one", level: "info" }).usage({ prompt_tokens: 100, completion_tokens: 10 }).stop(),
      reply().text("Done.").usage({ prompt_tokens: 120, completion_tokens: 3 }).stop(),
    );
    const a = await openai.runtime.sessions.create({ agent: "default" });
    const ra = await (await openai.runtime.sessions.send(a.id, "log a step")).result;

    cc = await createEngineHarness();
    cc.api.enqueue(
      message().thinking("Let me log it.", { pieces: 1 }).text("Logging.", 1).tool("mcp__veil__log_write", { message: "step one", level: "info" }).usage({ input_tokens: 100, output_tokens: 10 }).stop(),
      message().text("Done.", 1).usage({ input_tokens: 120, output_tokens: 3 }).stop(),
    );
    const rb = await (await cc.runtime.sessions.send(cc.sessionId, "log a step")).result;

    expect(ra.content).toBe("Done.");
    expect(rb.content).toBe("Done.");
    const left = shape(await sessionEvents(openai.events, a.id));
    const right = shape(await sessionEvents(cc.wire, cc.sessionId));
    expect(right.map((e) => e.type)).toEqual(left.map((e) => e.type));
    expect(right).toEqual(left);

    const pick = (events: VeilEvent[], type: string) => events.filter((e) => e.type === type).map((e) => JSON.parse(JSON.stringify(e)));
    const toolEnds = [pick(openai.events, "tool.end")[0], pick(cc.wire, "tool.end")[0]];
    for (const end of toolEnds) expect(end).toMatchObject({ toolName: "log_write", toolInput: { message: "step one", level: "info" }, success: true });
    const finals = [pick(openai.events, "chat.message").at(-1), pick(cc.wire, "chat.message").at(-1)];
    for (const final of finals) expect(final).toMatchObject({ role: "assistant", content: "Done.", finishReason: "stop" });
    expect(finals[1].tokenUsage).toEqual(finals[0].tokenUsage);
  });
});

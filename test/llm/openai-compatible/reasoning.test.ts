import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ProviderConfig, ReasoningConfig, ReasoningStyle } from "../../../src/config/types.js";
import { createOpenAiProvider } from "../../../src/llm/openai-compatible/client.js";
import { ANTHROPIC_THINKING_BUDGETS, reasoningFields, reasoningStyleFor } from "../../../src/llm/openai-compatible/reasoning.js";
import type { LlmMessage, LlmRequest, StreamEvent } from "../../../src/llm/types.js";
import { reply, startFakeLlm, type FakeLlm } from "../../helpers/fake-llm.js";

async function collect(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** A history with a tool-calling assistant turn that carries thinking, and a plain answer that does too. */
const HISTORY: LlmMessage[] = [
  { role: "user", content: "what is in /x?" },
  { role: "assistant", content: null, thinking: "I should read the file.", toolCalls: [{ id: "call_1", name: "read_file", arguments: '{"file":"/x"}' }] },
  { role: "tool", toolCallId: "call_1", content: "   1 | hello" },
  { role: "assistant", content: "It says hello.", thinking: "The file has one line." },
  { role: "user", content: "thanks" },
];

describe("reasoning on the wire", () => {
  let llm: FakeLlm;
  beforeEach(async () => {
    llm = await startFakeLlm();
  });
  afterEach(async () => {
    await llm.close();
  });

  async function sentBody(style: ReasoningStyle | undefined, reasoning: ReasoningConfig | null, extra: Partial<LlmRequest> = {}) {
    const config: ProviderConfig = { type: "openai", baseUrl: llm.baseUrl, apiKey: "k", ...(style ? { reasoning: style } : {}) };
    llm.enqueue(reply().text("ok").stop());
    const events = await collect(createOpenAiProvider("p", config, { env: {} }).stream({ model: "m", messages: HISTORY, reasoning, ...extra }));
    expect(events.at(-1)?.type).toBe("done");
    return llm.completionRequests.at(-1)!.body;
  }

  it('"openai" (the default for non-OpenRouter hosts): reasoning_effort; effort "none" omits it', async () => {
    const body = await sentBody(undefined, { effort: "high", max_tokens: 5000 });
    expect(body.reasoning_effort).toBe("high");
    expect(body).not.toHaveProperty("reasoning");
    expect(body).not.toHaveProperty("thinking");
    const none = await sentBody("openai", { effort: "none" });
    expect(none).not.toHaveProperty("reasoning_effort");
    const absent = await sentBody("openai", null);
    expect(absent).not.toHaveProperty("reasoning_effort");
  });

  it('"openai" sends stored thinking back as reasoning_content on tool-calling assistant messages only', async () => {
    const body = await sentBody("openai", { effort: "low" });
    expect(body.messages[1]).toEqual({
      role: "assistant",
      content: null,
      reasoning_content: "I should read the file.",
      tool_calls: [{ id: "call_1", type: "function", function: { name: "read_file", arguments: '{"file":"/x"}' } }],
    });
    expect(body.messages[3]).toEqual({ role: "assistant", content: "It says hello." });
  });

  it('"openrouter": reasoning { effort } or { max_tokens }, and thinking back as `reasoning`', async () => {
    const effort = await sentBody("openrouter", { effort: "medium" });
    expect(effort.reasoning).toEqual({ effort: "medium" });
    expect(effort).not.toHaveProperty("reasoning_effort");
    expect(effort.messages[1].reasoning).toBe("I should read the file.");
    expect(effort.messages[1]).not.toHaveProperty("reasoning_content");
    expect(effort.messages[3]).not.toHaveProperty("reasoning");
    const budget = await sentBody("openrouter", { effort: "high", max_tokens: 3000 });
    expect(budget.reasoning).toEqual({ max_tokens: 3000 });
    const off = await sentBody("openrouter", { effort: "none", max_tokens: 3000 });
    expect(off.reasoning).toEqual({ effort: "none" });
  });

  it('"anthropic": thinking { type: "enabled", budget_tokens } from max_tokens or the effort map; no thinking echoed', async () => {
    const explicit = await sentBody("anthropic", { effort: "low", max_tokens: 2500 });
    expect(explicit.thinking).toEqual({ type: "enabled", budget_tokens: 2500 });
    expect(explicit).not.toHaveProperty("reasoning_effort");
    expect(explicit).not.toHaveProperty("reasoning");
    expect(explicit.messages[1]).not.toHaveProperty("reasoning_content");
    expect(explicit.messages[1]).not.toHaveProperty("reasoning");
    const mapped = await sentBody("anthropic", { effort: "high" });
    expect(mapped.thinking).toEqual({ type: "enabled", budget_tokens: ANTHROPIC_THINKING_BUDGETS.high });
    const belowMax = await sentBody("anthropic", { effort: "high" }, { maxTokens: 8000 });
    expect(belowMax.thinking).toEqual({ type: "enabled", budget_tokens: 7999 });
    expect(belowMax.max_tokens).toBe(8000);
    expect(await sentBody("anthropic", { effort: "none" })).not.toHaveProperty("thinking");
  });

  it('"none": no reasoning field and no thinking sent back', async () => {
    const body = await sentBody("none", { effort: "high", max_tokens: 4000 });
    for (const key of ["reasoning_effort", "reasoning", "thinking"]) expect(body).not.toHaveProperty(key);
    expect(body.messages[1]).not.toHaveProperty("reasoning_content");
    expect(body.messages[1]).not.toHaveProperty("reasoning");
  });

  it("streams `reasoning_content` and `reasoning` deltas as thinking, once when a chunk carries both", async () => {
    const config: ProviderConfig = { type: "openai", baseUrl: llm.baseUrl, apiKey: "k" };
    const chunk = (delta: object) => ({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: null }] });
    llm.enqueue(
      reply()
        .raw(chunk({ reasoning_content: "one " }))
        .raw(chunk({ reasoning: "two " }))
        .raw(chunk({ reasoning_content: "three", reasoning: "three" }))
        .text("done")
        .stop(),
    );
    const events = await collect(createOpenAiProvider("p", config, { env: {} }).stream({ model: "m", messages: [{ role: "user", content: "hi" }] }));
    expect(events.filter((e) => e.type === "thinking").map((e) => (e as { delta: string }).delta)).toEqual(["one ", "two ", "three"]);
    const done = events.at(-1) as Extract<StreamEvent, { type: "done" }>;
    expect(done.message.thinking).toBe("one two three");
  });
});

describe("reasoningStyleFor", () => {
  it("defaults by host: openrouter.ai and its subdomains → openrouter, else openai; an explicit style wins", () => {
    expect(reasoningStyleFor({ baseUrl: "https://openrouter.ai/api/v1" })).toBe("openrouter");
    expect(reasoningStyleFor({ baseUrl: "https://eu.openrouter.ai/api/v1" })).toBe("openrouter");
    expect(reasoningStyleFor({ baseUrl: "https://notopenrouter.ai/v1" })).toBe("openai");
    expect(reasoningStyleFor({ baseUrl: "https://api.deepseek.com/v1" })).toBe("openai");
    expect(reasoningStyleFor({ baseUrl: "http://127.0.0.1:11434/v1" })).toBe("openai");
    expect(reasoningStyleFor({ baseUrl: "https://openrouter.ai/api/v1", reasoning: "none" })).toBe("none");
  });

  it("maps every effort to an Anthropic budget of at least 1,024 and drops thinking that cannot fit", () => {
    for (const effort of ["minimal", "low", "medium", "high", "xhigh"] as const) {
      const fields = reasoningFields({ effort }, "anthropic");
      expect(fields.thinking!.budget_tokens).toBe(ANTHROPIC_THINKING_BUDGETS[effort]);
      expect(fields.thinking!.budget_tokens).toBeGreaterThanOrEqual(1024);
    }
    expect(reasoningFields({ effort: "high" }, "anthropic", 1000)).toEqual({});
    expect(reasoningFields({ max_tokens: 2048 }, "openai")).toEqual({});
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { createOpenAiProvider } from "../../src/llm/openai-compatible/client.js";
import type { LlmMessage, StreamEvent } from "../../src/llm/types.js";
import { promptTokensOf, reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";

let llm: FakeLlm;
afterEach(async () => llm?.close());

async function call(messages: LlmMessage[]): Promise<StreamEvent> {
  const provider = createOpenAiProvider("fake", { type: "openai", baseUrl: llm.baseUrl, apiKey: "k" }, { env: {} });
  let last: StreamEvent | undefined;
  for await (const event of provider.stream({ model: "m", messages })) last = event;
  return last!;
}

const long = (n: number): LlmMessage => ({ role: "user", content: "x".repeat(n) });

describe("fake LLM: context limit and prompt cache", () => {
  it("answers OpenAI's 400 context_length_exceeded above the limit without consuming a queued reply", async () => {
    llm = await startFakeLlm({ contextLimit: 1000 });
    llm.enqueue(reply().text("fits").stop());
    const tooLong = await call([long(8000)]);
    expect(tooLong.type).toBe("error");
    if (tooLong.type !== "error") return;
    expect(tooLong.error).toMatchObject({ code: "VALIDATION_ERROR", status: 400, retryable: false });
    expect(tooLong.error.message).toMatch(/maximum context length is 1000 tokens\. However, your messages resulted in \d+ tokens/);
    expect(llm.overflowed).toHaveLength(1);
    expect(llm.pending()).toBe(1);
    const body = await fetch(`${llm.baseUrl}/chat/completions`, { method: "POST", body: JSON.stringify({ model: "m", messages: [long(8000)] }) });
    expect(body.status).toBe(400);
    expect((await body.json()).error).toMatchObject({ code: "context_length_exceeded", type: "invalid_request_error", param: "messages" });

    const fits = await call([long(100)]);
    expect(fits.type).toBe("done");
    llm.setContextLimit(null);
    llm.enqueue(reply().text("now fits").stop());
    expect((await call([long(8000)])).type).toBe("done");
  });

  it("reports the prefix shared with the previous request as cached tokens", async () => {
    llm = await startFakeLlm({ promptCache: true });
    llm.respond(() => reply().text("ok").stop());
    const first: LlmMessage[] = [{ role: "system", content: "s".repeat(4000) }, { role: "user", content: "one" }];
    const a = await call(first);
    expect(a.type === "done" && a.usage.cached_tokens).toBe(0);
    const second: LlmMessage[] = [...first, { role: "assistant", content: "ok" }, { role: "user", content: "two" }];
    const b = await call(second);
    if (b.type !== "done") throw new Error("expected done");
    expect(b.usage.prompt_tokens).toBe(promptTokensOf(llm.completionRequests[1]!.body));
    expect(b.usage.cached_tokens).toBeGreaterThan(1000);
    expect(b.usage.cached_tokens).toBeLessThan(b.usage.prompt_tokens);
    const changed = await call([{ role: "system", content: "t".repeat(4000) }, { role: "user", content: "one" }]);
    expect(changed.type === "done" && changed.usage.cached_tokens).toBeLessThan(10); // only `[{"role":"system","content":"` is shared
  });

  it("keeps the old API: no options means no limit and no cache", async () => {
    llm = await startFakeLlm();
    llm.enqueue(reply().text("big").stop(), reply().text("again").stop());
    expect((await call([long(200_000)])).type).toBe("done");
    const again = await call([long(200_000)]);
    expect(again.type === "done" && again.usage.cached_tokens).toBe(0);
  });
});

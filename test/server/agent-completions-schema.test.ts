/**
 * Structured output on the OpenAI wire: `response_format: { type: "json_schema" }` with
 * `model: "agent/<name>"` binds the agent's final answer; the message content is the JSON
 * text. Driven with the official `openai` client (its zod helper and parse() included).
 */
import { afterEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";
import { reply } from "../helpers/fake-llm.js";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const SCHEMA = { type: "object", properties: { answer: { type: "integer" } }, required: ["answer"], additionalProperties: false };
const FORMAT = { type: "json_schema" as const, json_schema: { name: "sum", schema: SCHEMA } };

async function client(): Promise<OpenAI> {
  h = await createRuntimeHarness();
  const server = await h.serve();
  return new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TEST_SECRET, maxRetries: 0 });
}

describe("agent/<name> with response_format json_schema", () => {
  it("answers the JSON text as the message content after tools and a repair; the repair carries the schema by its name", async () => {
    const openai = await client();
    h!.llm.enqueue(reply().tool("bash", { command: "echo $((19+23))" }).stop());
    h!.llm.enqueue(reply().text("The sum is 42.").stop());
    h!.llm.enqueue(reply().text('{"answer":42}').stop());
    const completion = await openai.chat.completions.create({ model: "agent/default", messages: [{ role: "user", content: "add 19 and 23 with bash" }], response_format: FORMAT });
    expect(completion.choices[0]!.message.content).toBe('{"answer":42}');
    expect(completion.choices[0]!.finish_reason).toBe("stop");
    const calls = h!.llm.completionRequests.map((r) => r.body);
    expect(calls).toHaveLength(3);
    expect(calls[1].messages.find((m: any) => m.role === "tool").content).toContain("42");
    expect(calls[2].response_format).toEqual({ type: "json_schema", json_schema: { name: "sum", schema: SCHEMA } });
  });

  it("streams the JSON text, and parse() with the zod helper gives the parsed value", async () => {
    const openai = await client();
    h!.llm.enqueue(reply().text('{"answer":').text("7}").stop());
    const stream = await openai.chat.completions.create({ model: "agent/default", stream: true, messages: [{ role: "user", content: "3+4" }], response_format: FORMAT });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    expect(JSON.parse(text)).toEqual({ answer: 7 });

    h!.llm.enqueue(reply().text('{"answer":9}').stop());
    const parsed = await openai.chat.completions.parse({
      model: "agent/default",
      messages: [{ role: "user", content: "4+5" }],
      response_format: zodResponseFormat(z.object({ answer: z.number().int() }), "sum"),
    });
    expect(parsed.choices[0]!.message.parsed).toEqual({ answer: 9 });
    const sent = h!.llm.completionRequests.at(-1)!.body;
    expect(sent.messages[0].content).toContain('"answer"');
  });

  it("a turn that never matches is a 502 OUTPUT_SCHEMA_MISMATCH (plain and streamed)", async () => {
    const openai = await client();
    h!.llm.respond(() => reply().text("no JSON from me").stop());
    const error = await openai.chat.completions.create({ model: "agent/default", messages: [{ role: "user", content: "x" }], response_format: FORMAT }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.status).toBe(502);
    expect(error.code).toBe("OUTPUT_SCHEMA_MISMATCH");
    expect(h!.llm.completionRequests).toHaveLength(3);

    const stream = await openai.chat.completions.create({ model: "agent/default", stream: true, messages: [{ role: "user", content: "x" }], response_format: FORMAT });
    const failure = await (async () => {
      for await (const _chunk of stream) {
        // read to the end
      }
    })().catch((e) => e);
    // The stream ends with an error frame, which the client raises with its code.
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect(failure.code).toBe("OUTPUT_SCHEMA_MISMATCH");
    expect(failure.message).toContain("after 2 repair requests");
    expect(h!.llm.completionRequests).toHaveLength(6);
  });

  it('json_object asks for any JSON object (one repair here); "text" binds nothing', async () => {
    const openai = await client();
    h!.llm.enqueue(reply().text("[1, 2]").stop(), reply().text('{"items":[1,2]}').stop());
    const object = await openai.chat.completions.create({ model: "agent/default", messages: [{ role: "user", content: "list" }], response_format: { type: "json_object" } });
    expect(JSON.parse(object.choices[0]!.message.content!)).toEqual({ items: [1, 2] });
    expect(h!.llm.completionRequests.at(-1)!.body.messages.at(-1).content).toContain("must be object");

    h!.llm.enqueue(reply().text("plain words").stop());
    const text = await openai.chat.completions.create({ model: "agent/default", messages: [{ role: "user", content: "say" }], response_format: { type: "text" } });
    expect(text.choices[0]!.message.content).toBe("plain words");
    expect(h!.llm.completionRequests).toHaveLength(3);
  });

  it("a bad response_format is a 400 before any session is created or model called", async () => {
    const openai = await client();
    const bad: unknown[] = [
      { type: "json_schema", json_schema: { name: "sum", schema: { type: "nope" } } },
      { type: "json_schema", json_schema: { name: "has spaces", schema: SCHEMA } },
      { type: "json_schema", json_schema: { schema: SCHEMA } },
      { type: "json_schema" },
      { type: "yaml" },
    ];
    for (const format of bad) {
      const error = await openai.chat.completions.create({ model: "agent/default", messages: [{ role: "user", content: "x" }], response_format: format as never }).catch((e) => e);
      expect(error.status, JSON.stringify(format)).toBe(400);
      expect(error.code).toBe("VALIDATION_ERROR");
    }
    expect(await h!.runtime.store.listSessions()).toEqual([]);
    expect(h!.llm.completionRequests).toHaveLength(0);
  });
});

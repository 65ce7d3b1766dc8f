/**
 * Structured output over HTTP (the native engine against the fake LLM): a chat's
 * `output_schema` binds the turn's final answer; tools work as usual before it; an answer
 * that is not valid JSON or does not match gets at most two repair requests, then the turn
 * fails with OUTPUT_SCHEMA_MISMATCH keeping the last answer.
 */
import { afterEach, describe, expect, it } from "vitest";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { readSse } from "../helpers/sse-client.js";

let h: RuntimeHarness | undefined;
let llm: FakeLlm | undefined;
afterEach(async () => {
  await h?.close();
  await llm?.close();
  h = undefined;
  llm = undefined;
});

const SCHEMA = {
  type: "object",
  properties: { city: { type: "string" }, population: { type: "integer", minimum: 0 } },
  required: ["city", "population"],
  additionalProperties: false,
};

type Server = Awaited<ReturnType<RuntimeHarness["serve"]>>;

/** Provider "p" (the fake), its settings as given, the only provider. */
function providerSettings(fake: FakeLlm, provider: Record<string, unknown> = {}) {
  return { providers: { p: { type: "openai", baseUrl: fake.baseUrl, apiKey: "sk-p", ...provider } }, defaultProvider: "p", defaultModel: "p/m" };
}

async function start(provider: Record<string, unknown> = {}): Promise<{ server: Server; sessionId: string }> {
  llm = await startFakeLlm();
  h = await createRuntimeHarness({ llm, settings: providerSettings(llm, provider), env: { VEIL_BASE_URL: undefined, VEIL_MODEL: undefined } });
  const server = await h.serve();
  const session = await (await server.fetch("/sessions", { method: "POST", body: JSON.stringify({}) })).json();
  return { server, sessionId: session.id };
}

function chat(server: Server, sessionId: string, body: Record<string, unknown>): Promise<Response> {
  return server.fetch(`/sessions/${sessionId}/chat`, { method: "POST", body: JSON.stringify(body) });
}

/** The user rows Veil added to ask for a matching answer. */
async function repairRows(server: Server, sessionId: string): Promise<{ content: string }[]> {
  const rows = await (await server.fetch(`/sessions/${sessionId}/messages`)).json();
  return rows.filter((r: any) => r.role === "user" && r.meta?.source === "output_schema");
}

function systemText(body: any): string {
  return body.messages.find((m: any) => m.role === "system").content;
}

describe("chat output_schema (sync)", () => {
  it("runs tools as usual, then answers the parsed value as structured beside the JSON content (no repair needed)", async () => {
    const { server, sessionId } = await start();
    llm!.enqueue(reply().tool("bash", { command: "echo 2100000" }).stop());
    llm!.enqueue(reply().text('{"city":"Paris",').text('"population":2100000}').stop());
    const res = await chat(server, sessionId, { message: "how many people live in Paris?", output_schema: SCHEMA });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ content: '{"city":"Paris","population":2100000}', stopReason: "stop", structured: { city: "Paris", population: 2100000 } });

    const [first, second] = llm!.completionRequests.map((r) => r.body);
    // The tool ran and its output went back; the words of the schema were in each call's system prompt.
    expect(second.messages.find((m: any) => m.role === "tool").content).toContain("2100000");
    for (const call of [first, second]) {
      expect(systemText(call)).toContain("Final answer format");
      expect(systemText(call)).toContain(JSON.stringify(SCHEMA));
    }
    // A provider that is not api.openai.com gets no response_format on calls that offer tools.
    expect(first.tools.length).toBeGreaterThan(0);
    expect(first.response_format).toBeUndefined();
    expect(await repairRows(server, sessionId)).toHaveLength(0);

    const done = h!.events.find((e) => e.type === "chat.done") as any;
    expect(done.structured).toEqual({ city: "Paris", population: 2100000 });
    expect(done.content).toBe(body.content);
  });

  it("asks again, naming what is wrong, when the answer is prose; the repair goes without tools and with response_format", async () => {
    const { server, sessionId } = await start();
    llm!.enqueue(reply().text("Paris has about 2.1 million people.").stop());
    llm!.enqueue(reply().text('{"city":"Paris","population":2100000}').stop());
    const body = await (await chat(server, sessionId, { message: "Paris?", output_schema: SCHEMA })).json();
    expect(body.structured).toEqual({ city: "Paris", population: 2100000 });
    expect(body.stopReason).toBe("stop");

    const repairs = await repairRows(server, sessionId);
    expect(repairs).toHaveLength(1);
    expect(repairs[0]!.content).toContain("not valid JSON");
    const second = llm!.completionRequests[1]!.body;
    // The answer stays in the history, followed by the repair request.
    const tail = second.messages.slice(-2);
    expect(tail[0]).toMatchObject({ role: "assistant", content: "Paris has about 2.1 million people." });
    expect(tail[1].role).toBe("user");
    expect(tail[1].content).toContain("not valid JSON");
    expect(second.tools).toBeUndefined();
    expect(second.response_format).toEqual({ type: "json_schema", json_schema: { name: "output", schema: SCHEMA } });
    const rows = await (await server.fetch(`/sessions/${sessionId}/messages`)).json();
    expect(rows.map((r: any) => r.role)).toEqual(["user", "assistant", "user", "assistant"]);
  });

  it("fails with 502 OUTPUT_SCHEMA_MISMATCH after two repairs, keeping the last answer", async () => {
    const { server, sessionId } = await start();
    llm!.enqueue(reply().text("```json\n{\"city\":\"Paris\"}\n```").stop());
    llm!.enqueue(reply().text('{"city":"Paris"}').stop());
    llm!.enqueue(reply().text('{"city":"Paris","population":-3}').stop());
    const res = await chat(server, sessionId, { message: "Paris?", output_schema: SCHEMA });
    expect(res.status).toBe(502);
    const body = await res.json();
    expect(body.error.code).toBe("OUTPUT_SCHEMA_MISMATCH");
    expect(body.error.message).toContain('"population" must be >= 0');
    expect(body).toMatchObject({ stopReason: "error", content: '{"city":"Paris","population":-3}' });
    expect(body.structured).toBeUndefined();
    expect(llm!.completionRequests).toHaveLength(3);

    const repairs = await repairRows(server, sessionId);
    expect(repairs).toHaveLength(2);
    expect(repairs[0]!.content).toContain("code fence");
    expect(repairs[1]!.content).toContain('missing required field "population"');
    const done = h!.events.find((e) => e.type === "chat.done") as any;
    expect(done).toMatchObject({ stopReason: "error", error: { code: "OUTPUT_SCHEMA_MISMATCH" }, content: '{"city":"Paris","population":-3}' });
    expect("structured" in done).toBe(false);
    // The session is usable again at once.
    llm!.enqueue(reply().text("free text is fine now").stop());
    expect((await (await chat(server, sessionId, { message: "and without a schema?" })).json()).content).toBe("free text is fine now");
  });
});

describe("chat output_schema (streamed)", () => {
  it("streams the turn, the repair request as a user chat.message, and chat.done with structured", async () => {
    const { server, sessionId } = await start();
    llm!.enqueue(reply().text('{"city":"Paris","population":"many"}').stop());
    llm!.enqueue(reply().text('{"city":"Paris",').text('"population":2100000}').stop());
    const res = await chat(server, sessionId, { message: "Paris?", output_schema: SCHEMA, stream: true });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const events = (await readSse(res, { until: (m) => m.data?.type === "chat.done" })).map((m) => m.data).filter(Boolean);
    const users = events.filter((e) => e.type === "chat.message" && e.role === "user");
    expect(users).toHaveLength(2);
    expect(users[1].content).toContain('"population" must be integer');
    const done = events.at(-1);
    expect(done).toMatchObject({ type: "chat.done", stopReason: "stop", structured: { city: "Paris", population: 2100000 }, content: '{"city":"Paris","population":2100000}' });
  });

  it("ends a mismatch with chat.done carrying the code and the last answer", async () => {
    const { server, sessionId } = await start();
    for (let i = 0; i < 3; i++) llm!.enqueue(reply().text(`answer ${i}`).stop());
    const res = await chat(server, sessionId, { message: "Paris?", output_schema: SCHEMA, stream: true });
    const done = (await readSse(res, { until: (m) => m.data?.type === "chat.done" })).at(-1)!.data;
    expect(done).toMatchObject({ stopReason: "error", error: { code: "OUTPUT_SCHEMA_MISMATCH" }, content: "answer 2" });
    expect(await repairRows(server, sessionId)).toHaveLength(2);
  });
});

describe("chat output_schema: refused before anything is stored or sent", () => {
  const cases: [string, unknown, RegExp][] = [
    ["a type AJV does not know", { type: "strng" }, /not a valid JSON Schema/],
    ["a draft it does not validate", { $schema: "http://json-schema.org/draft-03/schema#", type: "object" }, /draft-07, 2019-09 or 2020-12/],
    ["a $ref to nothing", { $ref: "#/definitions/missing" }, /not a valid JSON Schema/],
    ["not an object", ["type", "object"], /invalid request body|JSON Schema object/],
    ["a schema past 64 KiB", { type: "object", description: "x".repeat(70_000) }, /at most 65536/],
  ];
  for (const [what, schema, message] of cases) {
    it(`400 VALIDATION_ERROR for ${what}`, async () => {
      const { server, sessionId } = await start();
      const res = await chat(server, sessionId, { message: "hi", output_schema: schema });
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body.error.code).toBe("VALIDATION_ERROR");
      expect(body.error.message).toMatch(message);
      expect(await (await server.fetch(`/sessions/${sessionId}/messages`)).json()).toEqual([]);
      expect(llm!.completionRequests).toHaveLength(0);
    });
  }

  it("accepts a 2020-12 schema with $defs and checks formats", async () => {
    const { server, sessionId } = await start();
    const schema = { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", properties: { at: { $ref: "#/$defs/when" } }, required: ["at"], $defs: { when: { type: "string", format: "date-time" } } };
    llm!.enqueue(reply().text('{"at":"yesterday"}').stop());
    llm!.enqueue(reply().text('{"at":"2026-01-02T03:04:05Z"}').stop());
    const body = await (await chat(server, sessionId, { message: "when?", output_schema: schema })).json();
    expect(body.structured).toEqual({ at: "2026-01-02T03:04:05Z" });
    expect((await repairRows(server, sessionId))[0]!.content).toContain('must match format "date-time"');
  });

  it("409 SESSION_BUSY for a schema sent while the session runs a turn (nothing queued)", async () => {
    const { server, sessionId } = await start();
    let release!: () => void;
    llm!.enqueue(reply().waitFor(new Promise<void>((r) => (release = r))).text("first").stop());
    const first = chat(server, sessionId, { message: "one" });
    await llm!.waitForRequests(1);
    const res = await chat(server, sessionId, { message: "two", output_schema: SCHEMA });
    expect(res.status).toBe(409);
    expect((await res.json()).error.code).toBe("SESSION_BUSY");
    release();
    expect((await (await first).json()).content).toBe("first");
    const rows = await (await server.fetch(`/sessions/${sessionId}/messages`)).json();
    expect(rows.map((r: any) => r.content)).toEqual(["one", "first"]);
  });
});

describe("response_format by the provider's structuredOutput setting", () => {
  it('"with-tools": every call of the turn carries response_format beside its tools', async () => {
    const { server, sessionId } = await start({ structuredOutput: "with-tools" });
    llm!.enqueue(reply().tool("bash", { command: "true" }).stop());
    llm!.enqueue(reply().text('{"city":"Rome","population":2800000}').stop());
    const body = await (await chat(server, sessionId, { message: "Rome?", output_schema: SCHEMA })).json();
    expect(body.structured).toEqual({ city: "Rome", population: 2800000 });
    for (const { body: call } of llm!.completionRequests) {
      expect(call.tools.length).toBeGreaterThan(0);
      expect(call.response_format).toEqual({ type: "json_schema", json_schema: { name: "output", schema: SCHEMA } });
    }
  });

  it('"none": no call carries response_format, a repair keeps its tools, the words still go', async () => {
    const { server, sessionId } = await start({ structuredOutput: "none" });
    llm!.enqueue(reply().text("Rome, big").stop());
    llm!.enqueue(reply().text('{"city":"Rome","population":2800000}').stop());
    const body = await (await chat(server, sessionId, { message: "Rome?", output_schema: SCHEMA })).json();
    expect(body.structured).toEqual({ city: "Rome", population: 2800000 });
    for (const { body: call } of llm!.completionRequests) {
      expect(call.response_format).toBeUndefined();
      expect(call.tools.length).toBeGreaterThan(0);
      expect(systemText(call)).toContain(JSON.stringify(SCHEMA));
    }
  });

  it("an agent without tools gets response_format on its first call by default", async () => {
    llm = await startFakeLlm();
    h = await createRuntimeHarness({
      llm,
      files: { ".veil/agents/bare/agent.json": JSON.stringify({ description: "no tools", modes: { chat: { disallowedTools: ["*"] } } }) },
      settings: providerSettings(llm),
      env: { VEIL_BASE_URL: undefined, VEIL_MODEL: undefined },
    });
    const server = await h.serve();
    const session = await (await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "bare" }) })).json();
    llm.enqueue(reply().text('{"city":"Oslo","population":700000}').stop());
    const body = await (await chat(server, session.id, { message: "Oslo?", output_schema: SCHEMA })).json();
    expect(body.structured).toEqual({ city: "Oslo", population: 700000 });
    const first = llm.completionRequests[0]!.body;
    expect(first.tools).toBeUndefined();
    expect(first.response_format?.type).toBe("json_schema");
  });
});

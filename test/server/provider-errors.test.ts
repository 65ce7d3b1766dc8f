import { afterEach, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import OpenAI from "openai";
import { ERROR_STATUS, statusOf } from "../../src/errors.js";
import { httpError } from "../helpers/fake-llm.js";
import { errorOf } from "../helpers/error-answer.js";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

type Served = Awaited<ReturnType<RuntimeHarness["serve"]>>;
const post = (server: Served, path: string, body: unknown) => server.fetch(path, { method: "POST", body: JSON.stringify(body) });

describe("a provider's refusal is 502 LLM_ERROR naming the provider and its status, never Veil's own code", () => {
  it("its 401 and 403 on chat: not UNAUTHORIZED (the client's secret is fine), the message says which provider refused which key", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const session = (await (await post(server, "/sessions", {})).json()) as { id: string };
    for (const status of [401, 403]) {
      h.llm.enqueue(httpError(status, { message: "invalid api key" }));
      const error = await errorOf(await post(server, `/sessions/${session.id}/chat`, { message: "hi" }), "LLM_ERROR", 502);
      expect(error.message).toMatch(new RegExp(`^env: HTTP ${status} for model "fake-model": invalid api key \\(the provider refused the key: check "apiKey" / "apiKeyEnv" of provider "env"\\)$`));
    }
  });

  it("its 429 (after Veil's retries), 400 and 404 on chat, and its 401 on a streamed chat: LLM_ERROR", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const session = (await (await post(server, "/sessions", {})).json()) as { id: string };
    h.llm.enqueue(httpError(429, { retryAfter: "0" }), httpError(429, { retryAfter: "0" }));
    const limited = await errorOf(await post(server, `/sessions/${session.id}/chat`, { message: "one" }), "LLM_ERROR", 502);
    expect(limited.message).toMatch(/^env: HTTP 429 for model "fake-model"/);
    h.llm.enqueue(httpError(400, { message: "bad tool schema" }));
    expect((await errorOf(await post(server, `/sessions/${session.id}/chat`, { message: "two" }), "LLM_ERROR", 502)).message).toMatch(/HTTP 400 .*bad tool schema/);
    h.llm.enqueue(httpError(404, { message: "no such model" }));
    expect((await errorOf(await post(server, `/sessions/${session.id}/chat`, { message: "three" }), "LLM_ERROR", 502)).message).toMatch(/HTTP 404/);

    // Streamed, the turn's chat.done carries the same code.
    h.llm.enqueue(httpError(401));
    const streamed = await post(server, `/sessions/${session.id}/chat`, { message: "four", stream: true });
    expect(streamed.status).toBe(200);
    const text = await streamed.text();
    const done = text.split("\n").filter((line) => line.startsWith("data: ")).map((line) => JSON.parse(line.slice(6))).find((event) => event.type === "chat.done");
    expect(done.error).toMatchObject({ code: "LLM_ERROR", message: expect.stringContaining("HTTP 401") });
  });

  it("on the completions proxy (plain and streamed) and agent/<name>, the openai SDK sees a 502, not an AuthenticationError or a RateLimitError", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TEST_SECRET, maxRetries: 0 });
    const messages = [{ role: "user" as const, content: "hi" }];
    const failure = async (call: () => Promise<unknown>) => {
      const error = await call().then(
        () => {
          throw new Error("the call did not fail");
        },
        (e: InstanceType<typeof OpenAI.APIError>) => e,
      );
      return { name: error.constructor.name, status: error.status, code: error.code, message: error.message };
    };
    for (const model of ["fake-model", "agent/default"]) {
      h.llm.enqueue(httpError(401, { message: "invalid api key" }));
      expect(await failure(() => openai.chat.completions.create({ model, messages })), model).toMatchObject({
        name: "InternalServerError",
        status: 502,
        code: "LLM_ERROR",
        message: expect.stringMatching(/env: HTTP 401 for model "fake-model"/),
      });
      h.llm.enqueue(httpError(429, { retryAfter: "0" }), httpError(429, { retryAfter: "0" }));
      expect(await failure(() => openai.chat.completions.create({ model, messages })), model).toMatchObject({ status: 502, code: "LLM_ERROR" });
    }
    // Streamed through the proxy: a call that fails before any output is answered with its status too.
    h.llm.enqueue(httpError(403));
    const stream = await failure(async () => {
      for await (const _chunk of await openai.chat.completions.create({ model: "fake-model", messages, stream: true })) {
        // read to the end
      }
    });
    expect(stream).toMatchObject({ status: 502, code: "LLM_ERROR", message: expect.stringContaining("HTTP 403") });
    h.llm.enqueue(httpError(404));
    expect((await errorOf(await post(server, "/v1/chat/completions", { model: "fake-model", messages: [{ role: "user", content: "x" }] }), "LLM_ERROR", 502)).details).toEqual({ providerStatus: 404 });
  });
});

describe("one status per code", () => {
  it("the live-session cap is 429 TOO_MANY_SESSIONS; BUDGET_EXCEEDED is 402, CANCELLED 409, CONFIG_ERROR 400 everywhere", async () => {
    h = await createRuntimeHarness({ settings: { limits: { maxLiveSessions: 1 } } });
    const server = await h.serve();
    expect((await post(server, "/sessions", {})).status).toBe(201);
    const capped = await errorOf(await post(server, "/sessions", {}), "TOO_MANY_SESSIONS", 429);
    expect(capped.message).toMatch(/too many open sessions \(limit 1, settings\.limits\.maxLiveSessions\)/);
    expect([statusOf("BUDGET_EXCEEDED"), statusOf("CANCELLED"), statusOf("CONFIG_ERROR"), statusOf("LLM_ERROR")]).toEqual([402, 409, 400, 502]);
    expect(statusOf("NOT_A_CODE")).toBe(500);
  });

  it("the README's error table and /openapi.json list each code under the status src/errors.ts gives it", async () => {
    const codesIn = (text: string) => [...text.matchAll(/`?\b([A-Z][A-Z]+(?:_[A-Z]+)+|[A-Z]{4,})\b`?/g)].map((m) => m[1]!).filter((code) => Object.hasOwn(ERROR_STATUS, code));
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const rows = readme.split("\n").filter((line) => /^\| [45]\d\d \| /.test(line));
    expect(rows.length).toBeGreaterThan(8);
    const listed: string[] = [];
    for (const row of rows) {
      const [, status, codes] = row.split("|").map((cell) => cell.trim());
      for (const code of codesIn(codes!)) {
        expect({ code, status: statusOf(code) }).toEqual({ code, status: Number(status) });
        listed.push(code);
      }
    }
    expect(listed).toEqual(expect.arrayContaining(["CONFIG_ERROR", "BUDGET_EXCEEDED", "TOO_MANY_SESSIONS", "CANCELLED", "LLM_ERROR", "UNAUTHORIZED"]));

    h = await createRuntimeHarness();
    const server = await h.serve();
    const doc = (await (await server.fetch("/openapi.json")).json()) as { paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>> };
    const operation = doc.paths["/sessions/{id}/chat"]!.post!;
    for (const [status, { description }] of Object.entries(operation.responses)) {
      for (const code of codesIn(description)) expect({ code, status: statusOf(code) }).toEqual({ code, status: Number(status) });
    }
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(["402", "429", "502"]));
  });
});

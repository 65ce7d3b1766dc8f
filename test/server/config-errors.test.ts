import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { errorOf } from "../helpers/error-answer.js";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

type Served = Awaited<ReturnType<RuntimeHarness["serve"]>>;

const post = (server: Served, path: string, body: unknown) => server.fetch(path, { method: "POST", body: JSON.stringify(body) });

/** What the official SDK throws for a call (its class tells its user what went wrong). */
async function sdkError(call: () => Promise<unknown>): Promise<{ name: string; status: number | undefined; code: unknown; message: string }> {
  try {
    await call();
  } catch (error) {
    const e = error as InstanceType<typeof OpenAI.APIError>;
    return { name: e.constructor.name, status: e.status, code: e.code, message: e.message };
  }
  throw new Error("the call did not fail");
}

async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _chunk of stream) {
    // read to the end
  }
}

describe("a missing provider key is 400 CONFIG_ERROR naming the variable, wherever a turn is asked for", () => {
  it("chat (plain and streamed), the completions proxy and agent/<name> (plain and streamed, the SDK's BadRequestError); nothing is sent or stored", async () => {
    h = await createRuntimeHarness({ env: { VEIL_API_KEY: undefined } });
    const server = await h.serve();
    const session = (await (await post(server, "/sessions", {})).json()) as { id: string };
    expect(session.id).toBeTruthy();

    const sync = await errorOf(await post(server, `/sessions/${session.id}/chat`, { message: "hi" }), "CONFIG_ERROR", 400);
    expect(sync.message).toMatch(/VEIL_API_KEY \(apiKeyEnv\) is not set: export VEIL_API_KEY=<key>/);
    const streamed = await post(server, `/sessions/${session.id}/chat`, { message: "hi", stream: true });
    expect((await errorOf(streamed, "CONFIG_ERROR", 400)).message).toContain("VEIL_API_KEY");

    const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TEST_SECRET, maxRetries: 0 });
    const messages = [{ role: "user" as const, content: "hi" }];
    for (const model of ["fake-model", "agent/default"]) {
      const plain = await sdkError(() => openai.chat.completions.create({ model, messages }));
      expect(plain, model).toMatchObject({ name: "BadRequestError", status: 400, code: "CONFIG_ERROR", message: expect.stringContaining("VEIL_API_KEY") });
      const stream = await sdkError(async () => drain(await openai.chat.completions.create({ model, messages, stream: true })));
      expect(stream, model).toMatchObject({ name: "BadRequestError", status: 400, code: "CONFIG_ERROR", message: expect.stringContaining("VEIL_API_KEY") });
    }

    expect(h.llm.completionRequests).toHaveLength(0);
    expect(await (await server.fetch(`/sessions/${session.id}/messages`)).json()).toEqual([]);
    // agent/<name> opened no session for a turn it could not run.
    expect(((await (await server.fetch("/sessions")).json()) as unknown[]).length).toBe(1);
  });
});

describe("no model configured is 400 CONFIG_ERROR with the fix", () => {
  it("sessions are still created; chat (plain and streamed), the proxy and agent/<name> name defaultModel", async () => {
    h = await createRuntimeHarness({ env: { VEIL_MODEL: undefined } });
    const server = await h.serve();
    const session = (await (await post(server, "/sessions", {})).json()) as { id: string };
    const fix = /no model configured: set defaultModel in \.veil\/settings\.json or VEIL_MODEL/;
    expect((await errorOf(await post(server, `/sessions/${session.id}/chat`, { message: "hi" }), "CONFIG_ERROR", 400)).message).toMatch(fix);
    expect((await errorOf(await post(server, `/sessions/${session.id}/chat`, { message: "hi", stream: true }), "CONFIG_ERROR", 400)).message).toMatch(fix);
    const messages = [{ role: "user", content: "hi" }];
    for (const stream of [false, true]) {
      expect((await errorOf(await post(server, "/v1/chat/completions", { messages, stream }), "CONFIG_ERROR", 400)).message).toMatch(fix);
      expect((await errorOf(await post(server, "/v1/chat/completions", { model: "agent/default", messages, stream }), "CONFIG_ERROR", 400)).message).toMatch(fix);
    }
    expect(h.llm.completionRequests).toHaveLength(0);
  });
});

describe("a client's cc/ key that cannot run is 400 CONFIG_ERROR naming what is missing", () => {
  it("on the completions proxy (no provider serves cc/), on chat (plain and streamed) and on a session created with it", async () => {
    // No Anthropic credential of any kind for the claude-cli engine.
    const claudeHome = mkdtempSync(join(tmpdir(), "veil-no-claude-"));
    h = await createRuntimeHarness({ env: { ANTHROPIC_API_KEY: undefined, CLAUDE_CONFIG_DIR: claudeHome } });
    const server = await h.serve();
    const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TEST_SECRET, maxRetries: 0 });
    const messages = [{ role: "user" as const, content: "hi" }];
    const proxied = await sdkError(() => openai.chat.completions.create({ model: "cc/claude-sonnet-4-5", messages }));
    expect(proxied).toMatchObject({ name: "BadRequestError", status: 400, code: "CONFIG_ERROR", message: expect.stringMatching(/claude-cli engine.*agent\/<name>/) });
    const proxiedStream = await sdkError(async () => drain(await openai.chat.completions.create({ model: "cc/claude-sonnet-4-5", messages, stream: true })));
    expect(proxiedStream).toMatchObject({ status: 400, code: "CONFIG_ERROR" });

    const plainSession = (await (await post(server, "/sessions", {})).json()) as { id: string };
    const perCall = await post(server, `/sessions/${plainSession.id}/chat`, { message: "hi", model: "cc/claude-sonnet-4-5" });
    expect((await errorOf(perCall, "CONFIG_ERROR", 400)).message).toMatch(/claude-cli engine has no Anthropic API key: set settings\.claudeCli\.apiKey or apiKeyEnv, or ANTHROPIC_API_KEY/);
    const created = await post(server, "/sessions", { model: "cc/claude-sonnet-4-5" });
    expect(created.status).toBe(201);
    const ccSession = (await created.json()) as { id: string };
    expect((await errorOf(await post(server, `/sessions/${ccSession.id}/chat`, { message: "hi", stream: true }), "CONFIG_ERROR", 400)).message).toMatch(/ANTHROPIC_API_KEY/);
    expect(h.llm.completionRequests).toHaveLength(0);
  });
});

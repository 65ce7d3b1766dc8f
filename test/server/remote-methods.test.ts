import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { RemoteMethodService } from "../../src/core/remote-methods.js";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";
import { reply } from "../helpers/fake-llm.js";
import { ensureBuiltRunner } from "../tools/custom/built-runner.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

type Served = Awaited<ReturnType<RuntimeHarness["serve"]>>;

/** Reads an SSE response message by message, as a UI would. */
function sseReader(res: Response) {
  if (!res.body) throw new Error("no body");
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const ready: any[] = [];
  return {
    /** The next data message (optionally the next one matching `match`). */
    async next(match: (data: any) => boolean = () => true): Promise<any> {
      for (;;) {
        while (ready.length > 0) {
          const data = ready.shift();
          if (match(data)) return data;
        }
        const { value, done } = await reader.read();
        if (done) throw new Error("stream ended");
        buffer += decoder.decode(value, { stream: true });
        let index: number;
        while ((index = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, index);
          buffer = buffer.slice(index + 2);
          const data = block
            .split("\n")
            .filter((line) => line.startsWith("data:"))
            .map((line) => line.slice(5).trimStart())
            .join("\n");
          if (data) ready.push(JSON.parse(data));
        }
      }
    },
    async close() {
      await reader.cancel().catch(() => undefined);
    },
  };
}

function methods(h: RuntimeHarness): RemoteMethodService {
  const service = h.runtime.services.remoteMethods;
  if (!(service instanceof RemoteMethodService)) throw new Error("remote methods not installed");
  return service;
}

async function setup(options: Parameters<typeof createRuntimeHarness>[0] = {}): Promise<{ harness: RuntimeHarness; server: Served; service: RemoteMethodService }> {
  h = await createRuntimeHarness(options);
  const server = await h.serve();
  return { harness: h, server, service: methods(h) };
}

const postResult = (server: Served, id: string, body: unknown) => server.fetch(`/remote-methods/${id}/result`, { method: "POST", body: JSON.stringify(body) });

describe("remote-method endpoints", () => {
  it("of 20 concurrent result POSTs exactly one wins (200 { ok, id }); the rest get 409 { error: \"not_found\" }", async () => {
    const { server, service } = await setup();
    const waiting = service.execute({ sessionId: "sess_x", method: "user-dialog", data: { question: "Continue?" } });
    const [id] = service.pendingIds();
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => postResult(server, id!, { result: { pick: i } })));
    const bodies = await Promise.all(responses.map(async (res) => ({ status: res.status, body: await res.json() })));
    const winners = bodies.filter((b) => b.status === 200);
    expect(winners).toHaveLength(1);
    expect(winners[0]!.body).toEqual({ ok: true, id });
    const losers = bodies.filter((b) => b.status !== 200);
    expect(losers).toHaveLength(19);
    for (const loser of losers) expect(loser).toEqual({ status: 409, body: { error: "not_found" } });
    const winnerIndex = bodies.findIndex((b) => b.status === 200);
    await expect(waiting).resolves.toEqual({ pick: winnerIndex });
  });

  it("replays pending methods to a UI that connects later, then streams pending/done live; /events carries them too", async () => {
    const { server, service, harness } = await setup();
    const first = service.execute({ sessionId: "sess_a", method: "user-dialog", data: { question: "One?" } });
    const second = service.execute({ sessionId: "sess_b", method: "confirm", data: [1, 2] });
    const [idA, idB] = service.pendingIds();

    const all = await server.fetch("/events");
    const allEvents = sseReader(all);
    const res = await server.fetch("/remote-methods");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const ui = sseReader(res);
    expect(await ui.next()).toMatchObject({ type: "method.pending", id: idA, method: "user-dialog", data: { question: "One?" }, sessionId: "sess_a", createdAt: expect.any(String) });
    expect(await ui.next()).toMatchObject({ type: "method.pending", id: idB, method: "confirm", data: [1, 2], sessionId: "sess_b" });

    expect((await server.fetch("/remote-methods/pending").then((r) => r.json())) as unknown).toEqual({ pending: [idA, idB] });
    expect((await postResult(server, idA!, { result: "yes" })).status).toBe(200);
    expect(await ui.next()).toMatchObject({ type: "method.done", id: idA, timedOut: false });
    await expect(first).resolves.toBe("yes");

    const third = service.execute({ sessionId: "sess_c", method: "pick", data: null });
    const idC = service.pendingIds().at(-1);
    expect(await ui.next()).toMatchObject({ type: "method.pending", id: idC, method: "pick", sessionId: "sess_c" });
    // On /events the same events go out, in publish order.
    expect(await allEvents.next()).toMatchObject({ type: "method.done", id: idA, sessionId: "sess_a" });
    expect(await allEvents.next()).toMatchObject({ type: "method.pending", id: idC, sessionId: "sess_c" });

    // A result body without `result` delivers null; a non-JSON body is a 400.
    const invalid = await server.fetch(`/remote-methods/${idB}/result`, { method: "POST", body: "{oops" });
    expect(invalid.status).toBe(400);
    expect((await postResult(server, idB!, {})).status).toBe(200);
    await expect(second).resolves.toBeNull();
    expect((await postResult(server, idC!, { result: { deep: [true] } })).status).toBe(200);
    await expect(third).resolves.toEqual({ deep: [true] });
    expect(await server.fetch("/remote-methods/pending").then((r) => r.json())).toEqual({ pending: [] });
    expect(await (await postResult(server, "unknown-id", { result: 1 })).json()).toEqual({ error: "not_found" });
    await ui.close();
    await allEvents.close();
    expect(harness.events.filter((e) => e.type === "method.done")).toHaveLength(3);
  });

  it("/events?methods=pending sends the pending methods first (of one session with ?session=), then every event; a bad value is a 400", async () => {
    const { server, service } = await setup();
    const first = service.execute({ sessionId: "sess_a", method: "user-dialog", data: { question: "One?" } });
    const second = service.execute({ sessionId: "sess_b", method: "confirm", data: {} });
    const [idA, idB] = service.pendingIds();

    const both = sseReader(await server.fetch("/events?methods=pending"));
    expect(await both.next()).toMatchObject({ type: "method.pending", id: idA, method: "user-dialog", data: { question: "One?" }, sessionId: "sess_a", createdAt: expect.any(String) });
    expect(await both.next()).toMatchObject({ type: "method.pending", id: idB, sessionId: "sess_b" });
    const onlyB = sseReader(await server.fetch("/events?session=sess_b&methods=pending"));
    expect(await onlyB.next()).toMatchObject({ type: "method.pending", id: idB, sessionId: "sess_b" });

    expect((await postResult(server, idA!, { result: "yes" })).status).toBe(200);
    expect(await both.next()).toMatchObject({ type: "method.done", id: idA, sessionId: "sess_a" });
    expect((await postResult(server, idB!, { result: "ok" })).status).toBe(200);
    expect(await both.next()).toMatchObject({ type: "method.done", id: idB });
    // The session-filtered stream skipped sess_a's pending method and its done event.
    expect(await onlyB.next()).toMatchObject({ type: "method.done", id: idB, sessionId: "sess_b" });
    await Promise.all([first, second]);

    // Without the parameter nothing is sent first: the next event is a live one.
    const plain = sseReader(await server.fetch("/events"));
    const third = service.execute({ sessionId: "sess_c", method: "pick", data: null });
    const idC = service.pendingIds().at(-1);
    expect(await plain.next()).toMatchObject({ type: "method.pending", id: idC });
    expect((await postResult(server, idC!, { result: 1 })).status).toBe(200);
    await third;

    const bad = await server.fetch("/events?methods=all");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: "VALIDATION_ERROR", message: expect.stringContaining('methods must be "pending"') } });
    await Promise.all([both.close(), onlyB.close(), plain.close()]);
  });

  it("a timeout broadcasts method.done timedOut:true, rejects the waiting tool, and a late POST gets 409", async () => {
    const clock = new ManualClock();
    const { server, service } = await setup({ clock });
    const ui = sseReader(await server.fetch("/remote-methods"));
    const waiting = service.execute({ sessionId: "s", method: "confirm", data: {}, timeoutMs: 30_000 }).catch((e: Error & { code?: string }) => e);
    const pending = await ui.next();
    expect(pending.type).toBe("method.pending");
    await clock.advance(30_000);
    expect(await ui.next()).toEqual(expect.objectContaining({ type: "method.done", id: pending.id, timedOut: true }));
    expect(await waiting).toMatchObject({ code: "TIMEOUT", message: expect.stringContaining("within 30000 ms") });
    const late = await postResult(server, pending.id, { result: "too late" });
    expect(late.status).toBe(409);
    expect(await late.json()).toEqual({ error: "not_found" });
    await ui.close();
  });

  it("every endpoint needs the bearer secret", async () => {
    const { server } = await setup();
    for (const [path, method] of [["/remote-methods", "GET"], ["/remote-methods/pending", "GET"], ["/remote-methods/x/result", "POST"], ["/stream-tokens", "POST"]] as const) {
      const res = await fetch(`${server.url}${path}`, { method, ...(method === "POST" ? { body: "{}", headers: { "content-type": "application/json" } } : {}) });
      expect(res.status, path).toBe(401);
    }
  });
});

describe("stream tokens for browsers (EventSource cannot send Authorization)", () => {
  it("a minted token opens the stream paths by ?token= and nothing else; bad and expired tokens get 401", async () => {
    const clock = new ManualClock();
    const { server, service } = await setup({ clock });
    void service.execute({ sessionId: "s", method: "user-dialog", data: { q: 1 }, timeoutMs: 3_600_000 }).catch(() => undefined);

    const minted = await server.fetch("/stream-tokens", { method: "POST" });
    expect(minted.status).toBe(200);
    const { token, expiresAt } = (await minted.json()) as { token: string; expiresAt: string };
    expect(token).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(token).not.toContain(TEST_SECRET);
    expect(Date.parse(expiresAt)).toBe(clock.now() + 60_000);

    // Browser-style: no Authorization header, the token in the URL.
    const stream = await fetch(`${server.url}/remote-methods?token=${token}`);
    expect(stream.status).toBe(200);
    const ui = sseReader(stream);
    expect(await ui.next()).toMatchObject({ type: "method.pending", method: "user-dialog" });
    await ui.close();
    const events = await fetch(`${server.url}/events?token=${token}`);
    expect(events.status).toBe(200);
    await events.body?.cancel();

    for (const path of ["/sessions", "/remote-methods/pending", "/health/../sessions"]) {
      expect((await fetch(`${server.url}${path}?token=${token}`)).status, path).toBe(401);
    }
    const post = await fetch(`${server.url}/remote-methods/x/result?token=${token}`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    expect(post.status).toBe(401);
    const mintWithToken = await fetch(`${server.url}/stream-tokens?token=${token}`, { method: "POST" });
    expect(mintWithToken.status).toBe(401);
    expect((await fetch(`${server.url}/remote-methods?token=not-a-real-token`)).status).toBe(401);
    expect((await fetch(`${server.url}/remote-methods?token=${token.slice(0, -1)}x`)).status).toBe(401);

    // Past its minute a token opens no new stream (those it opened may reconnect: test/server/stream-tokens.test.ts).
    await clock.advance(60_001);
    const expired = await fetch(`${server.url}/sessions/s/events?token=${token}`);
    expect(expired.status).toBe(401);
    expect(((await expired.json()) as { error: { code: string } }).error.code).toBe("UNAUTHORIZED");
  });

  it("a token minted for one path opens only that path", async () => {
    const { server, harness } = await setup();
    const session = await harness.runtime.sessions.create({ agent: "default" });
    const path = `/sessions/${session.id}/events`;
    const { token } = (await (await server.fetch("/stream-tokens", { method: "POST", body: JSON.stringify({ path }) })).json()) as { token: string };
    const ok = await fetch(`${server.url}${path}?token=${token}`);
    expect(ok.status).toBe(200);
    await ok.body?.cancel();
    expect((await fetch(`${server.url}/remote-methods?token=${token}`)).status).toBe(401);
    const notAStream = await server.fetch("/stream-tokens", { method: "POST", body: JSON.stringify({ path: "/sessions" }) });
    expect(notAStream.status).toBe(400);
  });
});

describe("end to end: a custom tool asks the UI", { timeout: 60_000 }, () => {
  beforeAll(async () => {
    await ensureBuiltRunner();
  }, 120_000);

  it("the tool's _remoteMethodExecution is answered over HTTP and its return reaches the model", async () => {
    const files = {
      ".veil/tools/ask_user/tool.json": JSON.stringify({
        name: "ask_user",
        description: "Ask the user a question in the UI.",
        input_schema: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
        timeout: 30,
      }),
      ".veil/tools/ask_user/index.js": `'use strict';
module.exports = async function execute({ question, _remoteMethodExecution }) {
  const response = await _remoteMethodExecution({ method: 'ask_user', data: { question }, timeoutMs: 20000 });
  return 'User answered: ' + JSON.stringify(response);
};
`,
      ".veil/agents/asker/agent.json": JSON.stringify({ name: "asker", description: "asks", modes: { chat: { enabled: true, preActivatedTools: ["ask_user"] } } }),
    };
    const { server, harness } = await setup({ files });
    harness.llm.enqueue(reply().tool("ask_user", { question: "Deploy now?" }).stop());
    harness.llm.enqueue(reply().text("Deploying.").stop());

    const ui = sseReader(await server.fetch("/remote-methods"));
    const created = (await (await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "asker" }) })).json()) as { id: string };
    const chat = server.fetch(`/sessions/${created.id}/chat`, { method: "POST", body: JSON.stringify({ message: "ship it" }) });

    const pending = await ui.next((e) => e.type === "method.pending");
    expect(pending).toMatchObject({ method: "ask_user", data: { question: "Deploy now?" }, sessionId: created.id });
    const answered = await postResult(server, pending.id, { result: { answer: "yes" } });
    expect(await answered.json()).toEqual({ ok: true, id: pending.id });
    expect(await ui.next()).toMatchObject({ type: "method.done", id: pending.id, timedOut: false });

    const reply2 = (await (await chat).json()) as { content: string };
    expect(reply2.content).toBe("Deploying.");
    const toolMessage = harness.llm.completionRequests[1]!.body.messages.at(-1);
    expect(toolMessage).toMatchObject({ role: "tool", content: 'User answered: {"answer":"yes"}' });
    expect(harness.llm.completionRequests[0]!.body.tools.map((t: { function: { name: string } }) => t.function.name)).toContain("ask_user");
    await ui.close();
  });

  it("when the tool's watchdog fires before the remote timeout, the pending method is cleaned up (method.done, nothing dangles)", async () => {
    const files = {
      ".veil/tools/slow_ask/tool.json": JSON.stringify({ name: "slow_ask", description: "Asks with the default 120 s remote timeout.", input_schema: { type: "object", properties: {} }, timeout: 1 }),
      ".veil/tools/slow_ask/index.js": "'use strict';\nmodule.exports = async function execute({ _remoteMethodExecution }) {\n  return 'got ' + JSON.stringify(await _remoteMethodExecution({ method: 'never_answered', data: {} }));\n};\n",
      ".veil/agents/asker/agent.json": JSON.stringify({ name: "asker", modes: { chat: { enabled: true, preActivatedTools: ["slow_ask"] } } }),
    };
    // The watchdog runs on the runtime clock: it fires only when the test moves time, after the method is pending.
    const clock = new ManualClock();
    const { server, harness, service } = await setup({ files, clock });
    harness.llm.enqueue(reply().tool("slow_ask", {}).stop());
    harness.llm.enqueue(reply().text("gave up").stop());
    const ui = sseReader(await server.fetch("/remote-methods"));
    const session = await harness.runtime.sessions.create({ agent: "asker" });
    const receipt = await harness.runtime.sessions.send(session.id, "ask");
    const pending = await ui.next((e) => e.type === "method.pending");
    expect(service.pendingIds()).toEqual([pending.id]);
    await clock.advance(1_000);
    expect(await ui.next()).toMatchObject({ type: "method.done", id: pending.id, timedOut: false });
    expect((await receipt.result).content).toBe("gave up");
    expect(service.pendingIds()).toEqual([]);
    expect(harness.llm.completionRequests[1]!.body.messages.at(-1).content).toMatch(/^Error: TOOL_TIMEOUT/);
    await ui.close();
  });
});

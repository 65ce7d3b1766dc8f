import { createHmac } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import type { VeilEvent } from "../../src/base/events.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import { reply } from "../helpers/fake-llm.js";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";
import { startWebhookReceiver, type WebhookReceiver } from "../helpers/webhook-receiver.js";

const HOOK_SECRET = "whsec-test-1234";
let h: RuntimeHarness | undefined;
let receiver: WebhookReceiver | undefined;
const extra: Runtime[] = [];
afterEach(async () => {
  for (const runtime of extra.splice(0)) await runtime.close();
  await h?.close();
  await receiver?.close();
  h = receiver = undefined;
});

const sign = (body: string, secret = HOOK_SECRET) => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

function firstChatDone(runtime: Runtime, sessionId?: string): Promise<VeilEvent> {
  return new Promise((resolve) => {
    const off = runtime.bus.subscribe({ types: ["chat.done"], ...(sessionId ? { sessionId } : {}) }, (event) => {
      off();
      resolve(event);
    });
  });
}

describe("POST /webhooks/:name (inbound)", () => {
  const settings = {
    limits: { maxBodyBytes: 2048 },
    webhooks: {
      in: {
        github: { agent: "default", secretEnv: "GH_SECRET", prompt: "A push arrived:\n{{body}}\n(end {{body}})" },
        unset: { agent: "default", secretEnv: "NOT_SET_ANYWHERE", prompt: "{{body}}" },
        ghost: { agent: "nobody", secretEnv: "GH_SECRET", prompt: "{{body}}" },
      },
    },
  };

  async function setup() {
    h = await createRuntimeHarness({ settings, env: { GH_SECRET: HOOK_SECRET } });
    const server = await h.serve();
    // No bearer: the signature is the authentication.
    const post = (name: string, body: string, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/webhooks/${name}`, { method: "POST", body, headers: { "content-type": "application/json", ...headers } });
    return { h, server, post };
  }

  it("starts a session of the hook's agent with {{body}} replaced by the raw body, on a valid signature alone", async () => {
    const { h, server, post } = await setup();
    h.llm.respond(() => reply().text("handled").stop());
    const body = '{"ref":"refs/heads/main","commits":[1,2]}';
    const res = await post("github", body, { "x-veil-signature": sign(body) });
    expect(res.status).toBe(202);
    const { sessionId } = (await res.json()) as { sessionId: string };
    expect(sessionId).toMatch(/^sess_/);
    await firstChatDone(h.runtime, sessionId);
    const [message] = await h.runtime.store.listMessages(sessionId);
    expect(message).toMatchObject({ role: "user", content: `A push arrived:\n${body}\n(end ${body})`, meta: { source: "webhook", webhook: "github" } });
    expect(await h.runtime.store.getSession(sessionId)).toMatchObject({ agent: "default", origin: "webhook", owner_key: null });
    const sent = h.llm.completionRequests[0]!.body.messages.at(-1);
    expect(JSON.stringify(sent)).toContain("refs/heads/main");
    // The session is served like any other.
    expect((await server.fetch(`/sessions/${sessionId}`)).status).toBe(200);
  });

  it("refuses a missing or wrong signature with 401, an unknown name with 404, and runs nothing", async () => {
    const { h, post } = await setup();
    const body = '{"a":1}';
    for (const headers of [{}, { "x-veil-signature": sign(body, "other-secret") }, { "x-veil-signature": sign('{"a":2}') }, { "x-veil-signature": "sha256=zz" }, { "x-veil-signature": sign(body).replace("sha256=", "sha1=") }, { authorization: `Bearer ${TEST_SECRET}` }]) {
      const res = await post("github", body, headers);
      expect([res.status, ((await res.json()) as any).error.code], JSON.stringify(headers)).toEqual([401, "UNAUTHORIZED"]);
    }
    const unknown = await post("gitlab", body, { "x-veil-signature": sign(body) });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as any).error).toMatchObject({ code: "WEBHOOK_NOT_FOUND", message: expect.stringContaining("gitlab") });
    const proto = await post("constructor", body, { "x-veil-signature": sign(body) });
    expect(proto.status).toBe(404);
    const noSecret = await post("unset", body, { "x-veil-signature": sign(body) });
    expect(noSecret.status).toBe(400);
    expect(((await noSecret.json()) as any).error).toMatchObject({ code: "CONFIG_ERROR", message: expect.stringContaining("NOT_SET_ANYWHERE") });
    const ghost = await post("ghost", body, { "x-veil-signature": sign(body) });
    expect([ghost.status, ((await ghost.json()) as any).error.code]).toEqual([404, "AGENT_NOT_FOUND"]);
    expect(await h.runtime.store.listSessions()).toEqual([]);
    expect(h.llm.completionRequests).toHaveLength(0);
  });

  it("bounds the body by limits.maxBodyBytes (413) and still needs the bearer for everything else under /webhooks", async () => {
    const { h, server, post } = await setup();
    const big = JSON.stringify({ pad: "x".repeat(4096) });
    const res = await post("github", big, { "x-veil-signature": sign(big) });
    expect([res.status, ((await res.json()) as any).error.code]).toEqual([413, "PAYLOAD_TOO_LARGE"]);
    expect(await h.runtime.store.listSessions()).toEqual([]);
    expect((await fetch(`${server.url}/webhooks/deliveries`)).status).toBe(401);
    expect((await fetch(`${server.url}/webhooks/github`)).status).toBe(401);
  });

  it("answers a repeated X-Veil-Delivery with the first delivery's session and runs nothing more, also after a restart", async () => {
    const { h, post } = await setup();
    h.llm.respond(() => reply().text("once").stop());
    const body = '{"id":42}';
    const headers = { "x-veil-signature": sign(body), "x-veil-delivery": "delivery-42" };
    const answers = await Promise.all([1, 2, 3].map(() => post("github", body, headers)));
    const ids = await Promise.all(answers.map(async (res) => [res.status, ((await res.json()) as any).sessionId]));
    expect(ids.map(([status]) => status)).toEqual([202, 202, 202]);
    const first = ids[0]![1];
    expect(ids.map(([, id]) => id)).toEqual([first, first, first]);
    await h.runtime.sessions.waitIdle(first);
    await h.runtime.sessions.release(first);
    expect(h.llm.completionRequests).toHaveLength(1);
    expect((await h.runtime.store.listSessions()).map((s) => s.id)).toEqual([first]);

    // Another delivery id runs again.
    const other = (await (await post("github", body, { ...headers, "x-veil-delivery": "delivery-43" })).json()) as any;
    expect(other.sessionId).not.toBe(first);
    await h.runtime.sessions.waitIdle(other.sessionId);
    expect(h.llm.completionRequests).toHaveLength(2);

    await h.runtime.close();
    const restarted = await createRuntime({ workspace: h.ws.root, env: h.env, log: h.log });
    extra.push(restarted);
    const { startServer } = await import("../../src/server/listen.js");
    const server = await startServer({ runtime: restarted, secret: TEST_SECRET, port: 0, closeRuntime: false });
    try {
      const again = await fetch(`${server.url}/webhooks/github`, { method: "POST", body, headers });
      expect(again.status).toBe(202);
      expect(((await again.json()) as any).sessionId).toBe(first);
    } finally {
      await server.close();
    }
    await restarted.events.flush();
    expect(h.llm.completionRequests).toHaveLength(2);
  });
});

describe("webhook rows over time (manual clock)", () => {
  it("forgets delivery ids and settled deliveries after a week", async () => {
    receiver = await startWebhookReceiver({ secret: HOOK_SECRET });
    const clock = new ManualClock(Date.UTC(2026, 4, 1));
    h = await createRuntimeHarness({
      clock,
      settings: { webhooks: { in: { ci: { agent: "default", secretEnv: "HOOK_SECRET", prompt: "{{body}}" } }, out: [{ url: receiver.url, events: ["chat.done"], secretEnv: "HOOK_SECRET" }] } },
      env: { HOOK_SECRET },
    });
    h.llm.respond(() => reply().text("ok").stop());
    const delivery = { body: new TextEncoder().encode("{}"), signature: sign("{}"), deliveryId: "build-1" };
    const first = await h.runtime.webhooks.inbound.receive("ci", delivery);
    await h.runtime.sessions.waitIdle(first.sessionId);
    await receiver.waitFor(1);
    await h.runtime.webhooks.outbound.idle();
    expect(await h.runtime.webhooks.inbound.receive("ci", delivery)).toEqual({ sessionId: first.sessionId, duplicate: true });
    expect(await h.runtime.webhooks.outbound.list({ status: "delivered" })).toHaveLength(1);

    // The wall clock moves on by days; the hourly prune runs within the next hour.
    clock.jumpWall(6 * 24 * 3600_000);
    await clock.advance(3600_000);
    await h.runtime.webhooks.outbound.idle();
    expect((await h.runtime.webhooks.inbound.receive("ci", delivery)).duplicate).toBe(true);
    clock.jumpWall(2 * 24 * 3600_000);
    await clock.advance(3600_000);
    await h.runtime.webhooks.outbound.idle();
    expect(await h.runtime.webhooks.outbound.list({ status: "delivered" })).toEqual([]);
    const again = await h.runtime.webhooks.inbound.receive("ci", delivery);
    expect(again.duplicate).toBe(false);
    expect(again.sessionId).not.toBe(first.sessionId);
    await h.runtime.sessions.waitIdle(again.sessionId);
  });
});

describe("settings.webhooks.out (outbound)", () => {
  const outSettings = (url: string, events: string[] = ["chat.done", "method.pending", "session.budget"]) => ({
    webhooks: { out: [{ url, events, secretEnv: "HOOK_SECRET" }] },
  });

  it("POSTs a signed { deliveryId, type, sessionId, data } and retries with backoff until a 2xx (real HTTP, manual clock)", async () => {
    receiver = await startWebhookReceiver({ secret: HOOK_SECRET, answer: (hook) => (hook.attempt <= 2 ? 503 : 204) });
    const clock = new ManualClock(Date.UTC(2026, 2, 1));
    h = await createRuntimeHarness({ clock, settings: outSettings(receiver.url, ["chat.done"]), env: { HOOK_SECRET } });
    const server = await h.serve();
    h.llm.enqueue(reply().text("all done").stop());
    const session = (await (await server.fetch("/sessions", { method: "POST", body: JSON.stringify({}) })).json()) as { id: string };
    const chat = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "go" }) });
    expect(chat.status).toBe(200);
    const outbound = h.runtime.webhooks.outbound;
    const start = clock.now();

    const [first] = await receiver.waitFor(1);
    await outbound.idle();
    expect(first!.signed).toBe(true);
    expect(first!.headers["content-type"]).toBe("application/json");
    expect(first!.body).toEqual({
      deliveryId: first!.headers["x-veil-delivery"],
      type: "chat.done",
      sessionId: session.id,
      data: expect.objectContaining({ content: "all done", stopReason: "stop", finishReason: "stop" }),
    });
    let [listed] = (await (await server.fetch("/webhooks/deliveries")).json()).deliveries;
    expect(listed).toMatchObject({ deliveryId: first!.body.deliveryId, status: "pending", attempts: 1, lastStatus: 503, lastError: "HTTP 503", type: "chat.done", sessionId: session.id, url: receiver.url });
    // The first retry comes within 5 s, the third try within 30 s of the first.
    const retryAt = Date.parse(listed.nextAttemptAt) - start;
    expect(retryAt).toBeGreaterThan(0);
    expect(retryAt).toBeLessThanOrEqual(5000);

    await clock.advance(retryAt);
    await receiver.waitFor(2);
    await outbound.idle();
    [listed] = (await (await server.fetch("/webhooks/deliveries")).json()).deliveries;
    expect(listed).toMatchObject({ status: "pending", attempts: 2 });
    const thirdAt = Date.parse(listed.nextAttemptAt) - start;
    expect(thirdAt).toBeLessThanOrEqual(30_000);

    await clock.advance(thirdAt - retryAt);
    await receiver.waitFor(3);
    await outbound.idle();
    [listed] = (await (await server.fetch("/webhooks/deliveries")).json()).deliveries;
    expect(listed).toMatchObject({ status: "delivered", attempts: 3, lastStatus: 204, lastError: null, nextAttemptAt: null, deliveredAt: new Date(start + thirdAt).toISOString() });
    // Every try sent the same bytes, signed, under the same delivery id.
    expect(new Set(receiver.received.map((r) => r.raw)).size).toBe(1);
    expect(receiver.received.every((r) => r.signed && r.headers["x-veil-event"] === "chat.done")).toBe(true);
    await clock.advance(3_600_000);
    await outbound.idle();
    expect(receiver.received).toHaveLength(3);
    expect((await (await server.fetch("/webhooks/deliveries?status=pending")).json()).deliveries).toEqual([]);
  });

  it("gives up after every try failed: at least 5 tries spread over at least 30 s", async () => {
    receiver = await startWebhookReceiver({ secret: HOOK_SECRET, answer: () => 500 });
    const clock = new ManualClock(Date.UTC(2026, 2, 1));
    h = await createRuntimeHarness({ clock, settings: outSettings(receiver.url, ["chat.done"]), env: { HOOK_SECRET } });
    h.llm.enqueue(reply().text("x").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "go")).result;
    const outbound = h.runtime.webhooks.outbound;
    const start = clock.now();
    for (let tries = 1; ; tries++) {
      await receiver.waitFor(tries);
      await outbound.idle();
      const [row] = await outbound.list();
      if (row!.status === "failed") break;
      await clock.advance(Date.parse(row!.nextAttemptAt!) - clock.now());
    }
    const [row] = await outbound.list();
    expect(row!.attempts).toBeGreaterThanOrEqual(5);
    expect(receiver.received).toHaveLength(row!.attempts);
    expect(clock.now() - start).toBeGreaterThanOrEqual(30_000);
    expect(row).toMatchObject({ status: "failed", lastStatus: 500, nextAttemptAt: null });
  });

  it("reports method.pending and session.budget, each only to the hooks that subscribe to it", async () => {
    receiver = await startWebhookReceiver({ secret: HOOK_SECRET });
    const other = await startWebhookReceiver({ secret: HOOK_SECRET });
    h = await createRuntimeHarness({
      settings: {
        webhooks: {
          out: [
            { url: receiver.url, events: ["method.pending", "session.budget"], secretEnv: "HOOK_SECRET" },
            { url: other.url, events: ["chat.done"], secretEnv: "HOOK_SECRET" },
          ],
        },
      },
      env: { HOOK_SECRET },
    });
    try {
      const session = await h.runtime.sessions.create({ agent: "default", budget_override: { max_iterations: 1 } });
      h.llm.enqueue(reply().tool("todo_read", {}).stop());
      const result = await (await h.runtime.sessions.send(session.id, "loop")).result;
      expect(result.stopReason).toBe("max_iterations");
      const asked = h.runtime.remoteMethods.execute({ sessionId: session.id, method: "confirm", data: { question: "deploy?" } });
      const hooks = await receiver.waitFor(2);
      const byType = Object.fromEntries(hooks.map((hook) => [hook.body.type, hook.body]));
      expect(byType["session.budget"]).toMatchObject({ sessionId: session.id, data: { stopReason: "max_iterations" } });
      expect(byType["method.pending"]).toMatchObject({ sessionId: session.id, data: { method: "confirm", data: { question: "deploy?" }, id: expect.any(String) } });
      await h.runtime.remoteMethods.resolveResult(byType["method.pending"].data.id, true);
      expect(await asked).toBe(true);
      const [done] = await other.waitFor(1);
      expect(done!.body).toMatchObject({ type: "chat.done", sessionId: session.id, data: { stopReason: "max_iterations" } });
      await h.runtime.webhooks.outbound.idle();
      expect(receiver.received.every((r) => r.signed)).toBe(true);
      expect(receiver.received.map((r) => r.body.type).sort()).toEqual(["method.pending", "session.budget"]);
      expect(other.received.map((r) => r.body.type)).toEqual(["chat.done"]);
    } finally {
      await other.close();
    }
  });

  it("keeps a pending delivery across a restart and sends it from the next start", async () => {
    // A port that refuses now and listens after the restart.
    const probe = await startWebhookReceiver({ secret: HOOK_SECRET });
    const { port, url } = probe;
    await probe.close();
    h = await createRuntimeHarness({ settings: outSettings(url, ["chat.done"]), env: { HOOK_SECRET } });
    h.llm.enqueue(reply().text("before the restart").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "go")).result;
    await h.runtime.webhooks.outbound.idle();
    const [failed] = await h.runtime.webhooks.outbound.list();
    expect(failed).toMatchObject({ status: "pending", attempts: 1, lastStatus: null, lastError: expect.stringMatching(/ECONNREFUSED|fetch failed/) });
    await h.runtime.close();

    receiver = await startWebhookReceiver({ secret: HOOK_SECRET, port });
    const restarted = await createRuntime({ workspace: h.ws.root, env: h.env, log: h.log });
    extra.push(restarted);
    const [hook] = await receiver.waitFor(1);
    expect(hook!.body).toMatchObject({ deliveryId: failed!.deliveryId, type: "chat.done", sessionId: session.id, data: { content: "before the restart" } });
    expect(hook!.signed).toBe(true);
    await restarted.webhooks.outbound.idle();
    expect((await restarted.webhooks.outbound.list())[0]).toMatchObject({ status: "delivered", attempts: 2 });
  });
});

import { afterEach, describe, expect, it } from "vitest";
import type { VeilEvent } from "../../src/base/events.js";
import { reply } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { startWebhookReceiver, type WebhookReceiver } from "../helpers/webhook-receiver.js";

let h: RuntimeHarness | undefined;
let receiver: WebhookReceiver | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  await receiver?.close();
  receiver = undefined;
});

type Server = Awaited<ReturnType<RuntimeHarness["serve"]>>;
const HOOK_SECRET = "hook-secret";

function client(server: Server, key?: string) {
  return async (path: string, method = "GET", body?: unknown) => {
    const res = await server.fetch(path, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }), ...(key ? { headers: { authorization: `Bearer ${key}` } } : {}) });
    return { status: res.status, body: (await res.json()) as any };
  };
}

/** Resolves with the first chat.done the bus carries. */
function nextChatDone(h: RuntimeHarness): Promise<VeilEvent> {
  return new Promise((resolve) => {
    const off = h.runtime.bus.subscribe({ types: ["chat.done"] }, (event) => {
      off();
      resolve(event);
    });
  });
}

async function setup() {
  receiver = await startWebhookReceiver({ secret: HOOK_SECRET });
  h = await createRuntimeHarness({ settings: { webhooks: { out: [{ url: receiver.url, events: ["chat.done"], secretEnv: "HOOK_SECRET" }] } }, env: { HOOK_SECRET } });
  const server = await h.serve();
  const admin = client(server);
  const keyOf = async (name: string, extra: Record<string, unknown> = {}) => (await admin("/keys", "POST", { name, scopes: ["chat"], ...extra })).body as { id: string; key: string };
  const alice = await keyOf("alice");
  const bob = await keyOf("bob");
  return { h, server, admin, alice: { ...alice, call: client(server, alice.key) }, bob: { ...bob, call: client(server, bob.key) }, keyOf };
}

describe("schedules belong to the key that made them", () => {
  it("a key's schedule runs in a session of that key's, with origin schedule; only it and admins see it", async () => {
    const { h, admin, alice, bob } = await setup();
    h.llm.respond(() => reply().text("scheduled reply").stop());
    const done = nextChatDone(h);
    const created = await alice.call("/schedules", "POST", { agent: "default", prompt: "tick", everySeconds: 1 });
    expect(created.status).toBe(201);
    expect(created.body.ownerKey).toBe(alice.id);
    const schedule = created.body.id as string;
    const { sessionId } = await done;
    await h.runtime.schedules.setEnabled(schedule, false);
    await h.runtime.schedules.idle();
    expect(await h.runtime.store.getSession(sessionId)).toMatchObject({ owner_key: alice.id, origin: "schedule" });

    // Alice sees her schedule, its runs and the session they went to.
    expect((await alice.call("/schedules")).body.schedules.map((s: any) => s.id)).toEqual([schedule]);
    expect((await alice.call(`/schedules/${schedule}`)).status).toBe(200);
    expect((await alice.call(`/schedules/${schedule}/runs`)).body.runs[0]).toMatchObject({ sessionId, status: "ok" });
    expect((await alice.call(`/sessions/${sessionId}`)).status).toBe(200);

    // To Bob neither exists.
    expect((await bob.call("/schedules")).body.schedules).toEqual([]);
    for (const [path, method, body] of [[`/schedules/${schedule}`, "GET"], [`/schedules/${schedule}/runs`, "GET"], [`/schedules/${schedule}`, "PATCH", { enabled: true }], [`/schedules/${schedule}`, "DELETE"]] as const) {
      const answer = await bob.call(path, method, body);
      expect([answer.status, answer.body.error?.code], `${method} ${path}`).toEqual([404, "SCHEDULE_NOT_FOUND"]);
    }
    expect((await bob.call(`/sessions/${sessionId}`)).status).toBe(404);
    // ... nor the webhook delivery of its run's chat.done, which carries the reply.
    await receiver!.waitFor(1);
    await h.runtime.webhooks.outbound.idle();
    expect((await alice.call("/webhooks/deliveries")).body.deliveries.map((d: any) => d.sessionId)).toContain(sessionId);
    expect((await bob.call("/webhooks/deliveries")).body.deliveries).toEqual([]);
    expect((await admin("/webhooks/deliveries")).body.deliveries.map((d: any) => d.sessionId)).toContain(sessionId);
    expect((await h.runtime.store.getSchedule(schedule))?.enabled).toBe(false);

    // The admin sees every schedule; Alice's own changes work, and deleting it is hers to do.
    const mine = await admin("/schedules", "POST", { agent: "default", prompt: "admin's", everySeconds: 3600 });
    expect(mine.body.ownerKey).toBeNull();
    expect((await admin("/schedules")).body.schedules.map((s: any) => s.id)).toEqual([schedule, mine.body.id]);
    expect((await alice.call("/schedules")).body.schedules.map((s: any) => s.id)).toEqual([schedule]);
    expect((await alice.call(`/schedules/${mine.body.id}`)).status).toBe(404);
    expect((await alice.call(`/schedules/${schedule}`, "PATCH", { enabled: false })).status).toBe(200);
    expect((await alice.call(`/schedules/${schedule}`, "DELETE")).status).toBe(200);
    expect(await h.runtime.store.getSchedule(schedule)).toBeUndefined();
  });

  it("a key may not aim a schedule at another key's session, start an agent outside its list, or create one with read alone", async () => {
    const { server, admin, alice, bob, keyOf } = await setup();
    const bobSession = (await bob.call("/sessions", "POST", {})).body.id as string;
    const foreign = await alice.call("/schedules", "POST", { agent: "default", prompt: "x", everySeconds: 60, session: bobSession });
    expect([foreign.status, foreign.body.error.code]).toEqual([404, "SESSION_NOT_FOUND"]);
    const own = (await alice.call("/sessions", "POST", {})).body.id as string;
    expect((await alice.call("/schedules", "POST", { agent: "default", prompt: "x", everySeconds: 60, session: own })).status).toBe(201);

    const narrow = await keyOf("narrow", { agents: ["reviewer"] });
    const refused = await client(server, narrow.key)("/schedules", "POST", { agent: "default", prompt: "x", everySeconds: 60 });
    expect([refused.status, refused.body.error.code]).toEqual([403, "FORBIDDEN"]);
    const reader = await keyOf("reader", { scopes: ["read"] });
    const readOnly = client(server, reader.key);
    expect((await readOnly("/schedules", "POST", { agent: "default", prompt: "x", everySeconds: 60 })).status).toBe(403);
    expect((await readOnly("/schedules")).body.schedules).toEqual([]);
    // Only Alice's one schedule was stored.
    expect((await admin("/schedules")).body.schedules.map((s: any) => s.ownerKey)).toEqual([alice.id]);
  });
});

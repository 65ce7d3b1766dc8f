import { afterEach, describe, expect, it, vi } from "vitest";
import OpenAI from "openai";
import { RemoteMethodService } from "../../src/core/remote-methods.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { reply } from "../helpers/fake-llm.js";
import { readSse } from "../helpers/sse-client.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

type Served = Awaited<ReturnType<RuntimeHarness["serve"]>>;
type Client = (path: string, init?: RequestInit) => Promise<Response>;

const post = (body: unknown): RequestInit => ({ method: "POST", body: JSON.stringify(body) });

function as(server: Served, key: string): Client {
  return (path, init = {}) => server.fetch(path, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) } });
}

/** The server with two chat keys, each with one session of its own. */
async function twoKeys() {
  h = await createRuntimeHarness();
  const server = await h.serve();
  const keys: { id: string; key: string }[] = [];
  for (const name of ["alice", "bob"]) keys.push((await (await server.fetch("/keys", post({ name, scopes: ["chat"] }))).json()) as { id: string; key: string });
  const alice = as(server, keys[0]!.key);
  const bob = as(server, keys[1]!.key);
  const sessionOf = async (client: Client) => ((await (await client("/sessions", post({}))).json()) as { id: string }).id;
  return { server, keys, alice, bob, aliceSession: await sessionOf(alice), bobSession: await sessionOf(bob) };
}

describe("keys on streams, stream tokens, remote methods and the OpenAI wire", () => {
  it("a stream token acts as the key that minted it: its /events carry only that key's sessions; revoking the key ends the token", async () => {
    const { server, keys, alice, bob, aliceSession, bobSession } = await twoKeys();
    const { token } = (await (await bob("/stream-tokens", post({}))).json()) as { token: string };
    const controller = new AbortController();
    // No Authorization header: the token alone.
    const stream = await fetch(`${server.url}/events?token=${token}`, { signal: controller.signal });
    expect(stream.status).toBe(200);
    h!.llm.enqueue(reply().text("to alice").stop(), reply().text("to bob").stop());
    await alice(`/sessions/${aliceSession}/chat`, post({ message: "a" }));
    await bob(`/sessions/${bobSession}/chat`, post({ message: "b" }));
    const seen = await readSse(stream, { until: (m) => m.data?.type === "chat.done" });
    controller.abort();
    expect(new Set(seen.filter((m) => m.data).map((m) => m.data.sessionId))).toEqual(new Set([bobSession]));

    // A token for alice's session stream, minted by bob, opens nothing of hers.
    const bound = (await (await bob("/stream-tokens", post({ path: `/sessions/${aliceSession}/events` }))).json()) as { token: string };
    expect((await fetch(`${server.url}/sessions/${aliceSession}/events?token=${bound.token}`)).status).toBe(404);

    // Bob revokes every token: his own only.
    const aliceToken = (await (await alice("/stream-tokens", post({}))).json()) as { token: string };
    expect(((await (await bob("/stream-tokens", { method: "DELETE" })).json()) as { revoked: number }).revoked).toBe(2);
    const stillOpen = await fetch(`${server.url}/remote-methods?token=${aliceToken.token}`, { signal: AbortSignal.timeout(5000) });
    expect(stillOpen.status).toBe(200);
    await stillOpen.body?.cancel();

    // Revoking alice's key: her token no longer opens a stream.
    const second = (await (await alice("/stream-tokens", post({}))).json()) as { token: string };
    await server.fetch(`/keys/${keys[0]!.id}`, { method: "DELETE" });
    expect((await fetch(`${server.url}/events?token=${second.token}`)).status).toBe(401);
  });

  it("revoking a key closes every stream it holds open, a stream token's too; other keys' streams stay open", async () => {
    const { server, keys, alice, bob, aliceSession } = await twoKeys();
    const { token } = (await (await bob("/stream-tokens", post({}))).json()) as { token: string };
    const opened = await Promise.all([
      bob("/events"),
      bob("/remote-methods"),
      bob(`/sessions/${aliceSession}/events`).then((r) => r.status),
      fetch(`${server.url}/events?token=${token}`),
    ]);
    expect(opened[2]).toBe(404);
    const bobs = [opened[0], opened[1], opened[3]] as Response[];
    for (const stream of bobs) expect(stream.status).toBe(200);
    const aliceStream = await alice("/events");
    const ends = bobs.map((stream) => readSse(stream, { comments: true }));
    expect((await server.fetch(`/keys/${keys[1]!.id}`, { method: "DELETE" })).status).toBe(200);
    // Each stream ends (readSse settles at the end of the body) with a line saying why.
    for (const messages of await Promise.all(ends)) expect(messages.at(-1)?.comment).toMatch(/revoked/);
    // Alice's stream goes on: her session's events still reach it.
    h!.llm.enqueue(reply().text("still here").stop());
    await alice(`/sessions/${aliceSession}/chat`, post({ message: "a" }));
    const seen = await readSse(aliceStream, { until: (m) => m.data?.type === "chat.done" });
    expect(seen.some((m) => m.data?.sessionId === aliceSession)).toBe(true);
    // Alice's stream, cancelled by the reader, stops being watched too.
    await vi.waitFor(() => expect(h!.runtime.keys.watchedKeys).toBe(0));
  });

  it("a key that expires while its stream is open: the stream closes; one that only reads keeps its stream until then", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const created = (await (await server.fetch("/keys", post({ name: "brief", scopes: ["read"], expiresAt }))).json()) as { key: string };
    const stream = await as(server, created.key)("/events");
    expect(stream.status).toBe(200);
    const messages = await readSse(stream, { comments: true });
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    expect(messages.at(-1)?.comment).toMatch(/expired/);
    expect((await as(server, created.key)("/events")).status).toBe(401);
  });

  it("a stream a client closes stops being watched", async () => {
    const { bob } = await twoKeys();
    const controller = new AbortController();
    const stream = await bob("/events", { signal: controller.signal });
    expect(h!.runtime.keys.watchedKeys).toBe(1);
    controller.abort();
    await stream.body?.cancel().catch(() => undefined);
    await vi.waitFor(() => expect(h!.runtime.keys.watchedKeys).toBe(0));
  });

  it("a key sees and answers only its own sessions' remote methods", async () => {
    const { server, alice, bob, aliceSession, bobSession } = await twoKeys();
    const service = h!.runtime.services.remoteMethods as RemoteMethodService;
    const forAlice = service.execute({ sessionId: aliceSession, method: "confirm", data: { question: "A?" } });
    const forBob = service.execute({ sessionId: bobSession, method: "confirm", data: { question: "B?" } });
    const [aliceMethod, bobMethod] = service.pendingIds();

    expect(await (await bob("/remote-methods/pending")).json()).toEqual({ pending: [bobMethod] });
    expect(await (await server.fetch("/remote-methods/pending")).json()).toEqual({ pending: [aliceMethod, bobMethod] });
    const controller = new AbortController();
    const stream = await bob("/remote-methods", { signal: controller.signal });
    const first = await readSse(stream, { until: (m) => m.data?.type === "method.pending" });
    controller.abort();
    expect(first.filter((m) => m.data).map((m) => m.data.id)).toEqual([bobMethod]);

    const refused = await bob(`/remote-methods/${aliceMethod}/result`, post({ result: true }));
    expect(refused.status).toBe(409);
    expect(await refused.json()).toEqual({ error: "not_found" });
    expect((await bob(`/remote-methods/${bobMethod}/result`, post({ result: true }))).status).toBe(200);
    await expect(forBob).resolves.toBe(true);
    expect((await alice(`/remote-methods/${aliceMethod}/result`, post({ result: "yes" }))).status).toBe(200);
    await expect(forAlice).resolves.toBe("yes");
  });

  it("the OpenAI SDK works with a key; agent/<name>/<id> of another key's session is 404 and a new agent session is the key's", async () => {
    const { server, keys, bob, aliceSession } = await twoKeys();
    const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: keys[1]!.key, maxRetries: 0 });
    h!.llm.enqueue(reply().text("proxied").stop(), reply().text("agent says hi").stop());
    const proxied = await openai.chat.completions.create({ model: "fake-model", messages: [{ role: "user", content: "hi" }] });
    expect(proxied.choices[0]!.message.content).toBe("proxied");
    const agent = await openai.chat.completions.create({ model: "agent/default", messages: [{ role: "user", content: "hi" }] });
    expect(agent.choices[0]!.message.content).toBe("agent says hi");
    const created = agent.model.split("/").at(-1)!;
    expect(((await (await bob(`/sessions/${created}`)).json()) as { owner_key: string }).owner_key).toBe(keys[1]!.id);
    const foreign = await openai.chat.completions.create({ model: `agent/default/${aliceSession}`, messages: [{ role: "user", content: "hi" }] }).then(
      () => undefined,
      (error: unknown) => error as { status: number },
    );
    expect(foreign?.status).toBe(404);
    const reader = (await (await server.fetch("/keys", post({ name: "r", scopes: ["read"] }))).json()) as { key: string };
    const denied = await new OpenAI({ baseURL: `${server.url}/v1`, apiKey: reader.key, maxRetries: 0 }).chat.completions.create({ model: "fake-model", messages: [{ role: "user", content: "x" }] }).then(
      () => undefined,
      (error: unknown) => error as { status: number },
    );
    expect(denied?.status).toBe(403);
  });

  it("a sub-agent a key's session spawns belongs to that key", async () => {
    const { server, keys, alice, bob, aliceSession } = await twoKeys();
    h!.llm.enqueue(
      reply().tool("agent_spawn", { agent: "default", instance_name: "helper", objective: "help" }).stop(),
      reply().text("parent done").stop(),
    );
    const res = await alice(`/sessions/${aliceSession}/chat`, post({ message: "spawn" }));
    expect(res.status).toBe(200);
    const children = (await (await alice(`/sessions?parent=${aliceSession}`)).json()) as { id: string; owner_key: string }[];
    expect(children).toHaveLength(1);
    expect(children[0]!.owner_key).toBe(keys[0]!.id);
    expect((await bob(`/sessions/${children[0]!.id}`)).status).toBe(404);
    expect((await server.fetch(`/sessions/${children[0]!.id}`)).status).toBe(200);
  });

  it("a key's agent cannot message another key's session with agent_message: to it, that session does not exist", async () => {
    const { alice, aliceSession, bobSession } = await twoKeys();
    h!.llm.enqueue(reply().tool("agent_message", { sessionId: bobSession, message: "hello bob" }).stop(), reply().text("could not").stop());
    expect((await alice(`/sessions/${aliceSession}/chat`, post({ message: "write to bob" }))).status).toBe(200);
    const toolResult = h!.llm.completionRequests[1]!.body.messages.at(-1) as { role: string; content: string };
    expect(toolResult.role).toBe("tool");
    expect(toolResult.content).toMatch(/SESSION_NOT_FOUND/);
    const bobs = (await h!.runtime.store.listMessages(bobSession)).filter((m) => m.role === "user");
    expect(bobs).toEqual([]);
  });
});

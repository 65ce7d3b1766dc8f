import { afterEach, describe, expect, it } from "vitest";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { reply } from "../helpers/fake-llm.js";
import { readSse } from "../helpers/sse-client.js";
import { keyHash } from "../../src/core/access/keys.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

type Served = Awaited<ReturnType<RuntimeHarness["serve"]>>;

async function setup(options: Parameters<typeof createRuntimeHarness>[0] = {}): Promise<Served> {
  h = await createRuntimeHarness(options);
  return h.serve();
}

/** A client of the server that sends `key` as its bearer credential. */
function as(server: Served, key: string) {
  return (path: string, init: RequestInit = {}) => server.fetch(path, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) } });
}

const post = (body: unknown): RequestInit => ({ method: "POST", body: JSON.stringify(body) });

async function createKey(server: Served, body: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const res = await server.fetch("/keys", post(body));
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; key: string };
}

async function newSession(client: ReturnType<typeof as>, body: Record<string, unknown> = {}): Promise<string> {
  const res = await client("/sessions", post(body));
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

async function errorCode(res: Response): Promise<string> {
  return ((await res.json()) as { error: { code: string } }).error.code;
}

describe("API keys", () => {
  it("are created by the admin only, shown once, stored as a hash, listed without their value", async () => {
    const server = await setup();
    const created = await createKey(server, { name: "ci bot", scopes: ["chat"], agents: ["default"], requestsPerMinute: 100, budgetUsd: 5, expiresAt: "2099-01-01T00:00:00Z" });
    expect(created.key).toMatch(/^veil_sk_[A-Za-z0-9_-]{40,}$/);
    expect(created).toMatchObject({ name: "ci bot", scopes: ["chat"], agents: ["default"], requestsPerMinute: 100, budgetUsd: 5, spentUsd: 0, expiresAt: "2099-01-01T00:00:00.000Z", revokedAt: null });

    const listed = (await (await server.fetch("/keys")).json()) as { keys: Record<string, unknown>[] };
    expect(listed.keys).toHaveLength(1);
    expect(listed.keys[0]).toMatchObject({ id: created.id, name: "ci bot", prefix: created.key.slice(0, 12) });
    expect(JSON.stringify(listed)).not.toContain(created.key);
    expect(listed.keys[0]).not.toHaveProperty("key");
    expect(listed.keys[0]).not.toHaveProperty("hash");

    // The database file holds the hash, never the value.
    const store = SqliteStore.open(h!.runtime.config.paths.dbPath);
    try {
      const rows = store.connection.prepare("SELECT * FROM api_keys").all() as Record<string, unknown>[];
      expect(rows[0]!.hash).toBe(keyHash(created.key));
      expect(JSON.stringify(rows)).not.toContain(created.key.slice(8));
    } finally {
      await store.close();
    }

    // A chat key cannot make keys, list them or read the audit.
    const bot = as(server, created.key);
    expect((await bot("/keys", post({ name: "x", scopes: ["admin"] }))).status).toBe(403);
    expect(await errorCode(await bot("/keys"))).toBe("FORBIDDEN");
    expect((await bot("/audit")).status).toBe(403);
    // An admin key can.
    const admin = await createKey(server, { name: "ops", scopes: ["admin"] });
    expect((await as(server, admin.key)("/keys")).status).toBe(200);
  });

  it("refuse bad bodies with 400 VALIDATION_ERROR and unknown ids with 404 KEY_NOT_FOUND", async () => {
    const server = await setup();
    for (const body of [{ scopes: ["read"] }, { name: "x", scopes: [] }, { name: "x", scopes: ["root"] }, { name: "x", scopes: ["read"], expiresAt: "yesterday" }, { name: "x", scopes: ["read"], expiresAt: "2001-01-01T00:00:00Z" }, { name: "x", scopes: ["read"], requestsPerMinute: 0 }, { name: "x", scopes: ["read"], extra: 1 }]) {
      const res = await server.fetch("/keys", post(body));
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await errorCode(res)).toBe("VALIDATION_ERROR");
    }
    const missing = await server.fetch("/keys/key_nope", { method: "DELETE" });
    expect(missing.status).toBe(404);
    expect(await errorCode(missing)).toBe("KEY_NOT_FOUND");
  });

  it("apply scopes: read reads, chat also runs its sessions, admin does everything; a lacking scope is 403", async () => {
    const server = await setup();
    h!.llm.enqueue(reply().text("hello").stop());
    const reader = as(server, (await createKey(server, { name: "r", scopes: ["read"] })).key);
    const chatter = as(server, (await createKey(server, { name: "c", scopes: ["chat"] })).key);

    expect((await reader("/sessions")).status).toBe(200);
    expect((await reader("/agents")).status).toBe(200);
    expect((await reader("/memory/notes.md")).status).not.toBe(403);
    const refused = await reader("/sessions", post({}));
    expect(refused.status).toBe(403);
    expect(await errorCode(refused)).toBe("FORBIDDEN");
    expect((await reader("/v1/chat/completions", post({ messages: [{ role: "user", content: "hi" }] }))).status).toBe(403);

    const id = await newSession(chatter);
    const chat = await chatter(`/sessions/${id}/chat`, post({ message: "hi" }));
    expect(chat.status).toBe(200);
    expect(((await chat.json()) as { content: string }).content).toBe("hello");
    expect((await chatter("/memory/notes.md", { method: "PUT", body: JSON.stringify({ content: "x" }) })).status).toBe(403);
    expect((await chatter(`/sessions/${id}/wakeup`, post({ time: "5m", message: "m" }))).status).toBe(403);
    expect((await chatter(`/sessions/${id}`, { method: "DELETE" })).status).toBe(200);
  });

  it("own their sessions: another key gets 404, does not list them, and its streams never carry their events", async () => {
    const server = await setup();
    const a = await createKey(server, { name: "a", scopes: ["chat"] });
    const b = await createKey(server, { name: "b", scopes: ["chat"] });
    const alice = as(server, a.key);
    const bob = as(server, b.key);
    const mine = await newSession(alice);
    const theirs = await newSession(bob);
    const adminOwn = await newSession(server.fetch);

    for (const [method, path] of [["GET", `/sessions/${mine}`], ["GET", `/sessions/${mine}/messages`], ["GET", `/sessions/${mine}/events?follow=false`], ["POST", `/sessions/${mine}/cancel`], ["DELETE", `/sessions/${mine}`], ["GET", `/events?session=${mine}`], ["GET", `/sessions/${adminOwn}`]] as const) {
      const res = await bob(path, { method, ...(method === "POST" ? { body: "{}" } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(await errorCode(res)).toBe("SESSION_NOT_FOUND");
    }
    const chat = await bob(`/sessions/${mine}/chat`, post({ message: "hi" }));
    expect(chat.status).toBe(404);
    expect(((await (await bob("/sessions")).json()) as { id: string }[]).map((s) => s.id)).toEqual([theirs]);
    expect(((await (await alice("/sessions")).json()) as { id: string; owner_key: string }[]).map((s) => [s.id, s.owner_key])).toEqual([[mine, a.id]]);
    // The admin (the secret) sees every session.
    expect(((await (await server.fetch("/sessions")).json()) as { id: string }[]).map((s) => s.id).sort()).toEqual([mine, theirs, adminOwn].sort());

    // Bob's /events stream: his session's events only, also replayed from the log.
    const controller = new AbortController();
    const stream = await bob("/events", { signal: controller.signal, headers: { "last-event-id": "0" } });
    h!.llm.enqueue(reply().text("for alice").stop(), reply().text("for bob").stop());
    await alice(`/sessions/${mine}/chat`, post({ message: "one" }));
    await bob(`/sessions/${theirs}/chat`, post({ message: "two" }));
    const seen = await readSse(stream, { until: (m) => m.data?.type === "chat.done" && m.data.sessionId === theirs });
    controller.abort();
    const sessionsSeen = new Set(seen.filter((m) => m.data).map((m) => m.data.sessionId));
    expect([...sessionsSeen]).toEqual([theirs]);
    expect(seen.some((m) => m.data?.type === "chat.message" && String(m.data.content ?? "").includes("for alice"))).toBe(false);
  });

  it("close and rename only their own sessions: bulk closes report another key's ids as not found", async () => {
    const server = await setup();
    const alice = as(server, (await createKey(server, { name: "a", scopes: ["chat"] })).key);
    const bob = as(server, (await createKey(server, { name: "b", scopes: ["chat"] })).key);
    const hers = await newSession(alice);
    const his = await newSession(bob);
    const byQuery = (await (await bob(`/sessions?ids=${hers},${his}`, { method: "DELETE" })).json()) as { closed: { id: string }[]; notFound: string[] };
    expect(byQuery.closed.map((s) => s.id)).toEqual([his]);
    expect(byQuery.notFound).toEqual([hers]);
    const byBody = (await (await bob("/sessions/close", post({ ids: [hers] }))).json()) as { closed: unknown[]; notFound: string[] };
    expect(byBody).toEqual({ closed: [], notFound: [hers] });
    const pruned = (await (await bob("/sessions/close", post({ idle: "0s" }))).json()) as { closed: unknown[] };
    expect(pruned.closed).toEqual([]);
    expect(((await (await alice(`/sessions/${hers}`)).json()) as { status: string }).status).toBe("idle");
    expect((await bob(`/sessions/${hers}`, { method: "PATCH", body: JSON.stringify({ title: "mine now" }) })).status).toBe(404);
    const renamed = await alice(`/sessions/${hers}`, { method: "PATCH", body: JSON.stringify({ title: "my title" }) });
    expect(((await renamed.json()) as { title: string }).title).toBe("my title");
  });

  it("limit the agents a key may start: 403 for any other", async () => {
    const server = await setup({ files: { ".veil/agents/helper/agent.json": JSON.stringify({ description: "helper" }) } });
    const client = as(server, (await createKey(server, { name: "k", scopes: ["chat"], agents: ["default"] })).key);
    expect((await client("/sessions", post({ agent: "default" }))).status).toBe(201);
    const refused = await client("/sessions", post({ agent: "helper" }));
    expect(refused.status).toBe(403);
    expect(await errorCode(refused)).toBe("FORBIDDEN");
    const wire = await client("/v1/chat/completions", post({ model: "agent/helper", messages: [{ role: "user", content: "hi" }] }));
    expect(wire.status).toBe(403);
  });

  it("stop working at once when revoked, and when expired", async () => {
    const server = await setup();
    const created = await createKey(server, { name: "k", scopes: ["read"] });
    const client = as(server, created.key);
    expect((await client("/sessions")).status).toBe(200);
    const revoked = await server.fetch(`/keys/${created.id}`, { method: "DELETE" });
    expect(((await revoked.json()) as { revokedAt: string }).revokedAt).toMatch(/^\d{4}-/);
    const after = await client("/sessions");
    expect(after.status).toBe(401);
    expect(await errorCode(after)).toBe("UNAUTHORIZED");
    expect((await as(server, "veil_sk_made-up")("/sessions")).status).toBe(401);

    const soon = new Date(Date.now() + 1500).toISOString();
    const expiring = as(server, (await createKey(server, { name: "e", scopes: ["read"], expiresAt: soon })).key);
    expect((await expiring("/sessions")).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, Date.parse(soon) - Date.now() + 50));
    expect((await expiring("/sessions")).status).toBe(401);
  });

  it("answer 429 RATE_LIMITED with Retry-After past requestsPerMinute", async () => {
    const server = await setup();
    const client = as(server, (await createKey(server, { name: "k", scopes: ["read"], requestsPerMinute: 3 })).key);
    for (let i = 0; i < 3; i++) expect((await client("/sessions")).status).toBe(200);
    const limited = await client("/sessions");
    expect(limited.status).toBe(429);
    expect(await errorCode(limited)).toBe("RATE_LIMITED");
    const wait = Number(limited.headers.get("retry-after"));
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    // Another key, and the secret, are not limited by it.
    expect((await server.fetch("/sessions")).status).toBe(200);
  });

  it("stop a running turn at its next step once the key's budget is spent, then answer 402 BUDGET_EXCEEDED", async () => {
    // $1 a call: 1,000,000 prompt tokens at $1 per million.
    const server = await setup({ models: { "fake-model": { context_window: 10_000_000, cost: { input: 1, output: 0 } } } });
    const usage = { prompt_tokens: 1_000_000, completion_tokens: 1 };
    h!.llm.enqueue(
      reply().tool("log_write", { message: "a" }).usage(usage).stop(),
      reply().tool("log_write", { message: "b" }).usage(usage).stop(),
      reply().tool("log_write", { message: "c" }).usage(usage).stop(),
      reply().text("done").usage(usage).stop(),
    );
    const created = await createKey(server, { name: "k", scopes: ["chat"], budgetUsd: 1.5 });
    const client = as(server, created.key);
    const id = await newSession(client);
    const res = await client(`/sessions/${id}/chat`, post({ message: "go" }));
    expect(res.status).toBe(200);
    const result = (await res.json()) as { stopReason: string };
    expect(result.stopReason).toBe("budget");
    expect(h!.llm.requests).toHaveLength(2);
    const spent = await client(`/sessions/${id}/chat`, post({ message: "more" }));
    expect(spent.status).toBe(402);
    expect(await errorCode(spent)).toBe("BUDGET_EXCEEDED");
    expect((await client("/sessions", post({}))).status).toBe(201);
    const listed = (await (await server.fetch(`/keys/${created.id}`)).json()) as { spentUsd: number };
    expect(listed.spentUsd).toBeCloseTo(2, 6);
    // A budgeted key cannot go around it through the unmetered completions proxy.
    expect((await client("/v1/chat/completions", post({ messages: [{ role: "user", content: "hi" }] }))).status).toBe(402);
  });

  it("record every request that changes something in the audit, in order, for the admin", async () => {
    const server = await setup();
    const created = await createKey(server, { name: "k", scopes: ["read"] });
    const client = as(server, created.key);
    await client("/sessions");
    await client("/sessions", post({}));
    const id = await newSession(server.fetch);
    const { entries } = (await (await server.fetch("/audit")).json()) as { entries: Record<string, unknown>[] };
    expect(entries.map((e) => [e.key, e.method, e.path, e.status, e.sessionId])).toEqual([
      ["admin", "POST", "/keys", 201, undefined],
      [created.id, "POST", "/sessions", 403, undefined],
      ["admin", "POST", "/sessions", 201, id],
    ]);
    expect(entries[0]!.at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    const seqs = entries.map((e) => e.seq as number);
    const page = (await (await server.fetch(`/audit?after=${seqs[0]}&limit=1`)).json()) as { entries: { seq: number }[] };
    expect(page.entries.map((e) => e.seq)).toEqual([seqs[1]]);
    expect((await server.fetch("/audit?after=x")).status).toBe(400);
  });
});

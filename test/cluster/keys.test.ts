import { describe, expect, it } from "vitest";
import { reply } from "../helpers/fake-llm.js";
import { readSse } from "../helpers/sse-client.js";
import { answer, clusterHarness, eventually, post } from "../helpers/cluster.js";
import type { SpawnedServer } from "../helpers/spawned-server.js";

const cluster = clusterHarness("cluster/keys.test");

/** `node`'s fetch with an API key instead of the secret. */
const as = (node: SpawnedServer, key: string) => (path: string, init: RequestInit = {}) =>
  node.fetch(path, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) } });

describe.skipIf(!!cluster.unavailable)("API keys across nodes on one PostgreSQL", () => {
  it("a key made on one node works on the other, and revoking it on one stops it on the other within a second", async () => {
    const [a, b] = await cluster.start(2);
    const created = await post(a!, "/keys", { name: "k", scopes: ["read"] });
    const onB = as(b!, created.key);
    expect((await onB("/sessions")).status).toBe(200);
    const revoked = await answer(a!.fetch(`/keys/${created.id}`, { method: "DELETE" }));
    expect(revoked.status).toBe(200);
    expect((await as(a!, created.key)("/sessions")).status).toBe(401);
    // B may trust its cached row for a second (test/core/access/key-cache.test.ts holds it to that on a
    // manual clock); here the wall clock of a loaded machine only bounds a failing wait.
    await eventually(async () => (await onB("/sessions")).status === 401, "the revoked key refused on node B", 20_000);
  });

  it("a stream a key holds open on one node closes when the key is revoked on the other, within the key cache's bound", async () => {
    const [a, b] = await cluster.start(2);
    const created = await post(a!, "/keys", { name: "k", scopes: ["read"] });
    const stream = await as(b!, created.key)("/events");
    expect(stream.status).toBe(200);
    const ended = readSse(stream, { comments: true });
    expect((await answer(a!.fetch(`/keys/${created.id}`, { method: "DELETE" }))).status).toBe(200);
    const revokedAt = Date.now();
    expect((await ended).at(-1)?.comment).toMatch(/revoked/);
    // Node B re-checks open streams' keys every second and trusts a cached row for a second.
    expect(Date.now() - revokedAt).toBeLessThan(3000);
  });

  it("requestsPerMinute counts the requests of both nodes together", async () => {
    const [a, b] = await cluster.start(2);
    const created = await post(a!, "/keys", { name: "k", scopes: ["read"], requestsPerMinute: 4 });
    // Windows are whole minutes of the clock: start well inside one so all six requests share it.
    const leftInMinute = 60_000 - (Date.now() % 60_000);
    if (leftInMinute < 10_000) await new Promise((resolve) => setTimeout(resolve, leftInMinute + 100));
    const statuses: number[] = [];
    for (const node of [a!, b!, a!, b!]) statuses.push((await as(node, created.key)("/sessions")).status);
    const fifth = await as(b!, created.key)("/sessions");
    const sixth = await as(a!, created.key)("/sessions");
    expect(statuses).toEqual([200, 200, 200, 200]);
    expect([fifth.status, sixth.status]).toEqual([429, 429]);
    expect(Number(fifth.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  });

  it("a key's /events on one node carries its session run on the other, and never another key's", async () => {
    const [a, b] = await cluster.start(2);
    const alice = await post(a!, "/keys", { name: "alice", scopes: ["chat"] });
    const bob = await post(a!, "/keys", { name: "bob", scopes: ["chat"] });
    // Alice watches on node B before her session exists; it is created and run on node A.
    const controller = new AbortController();
    const stream = await as(b!, alice.key)("/events", { headers: { accept: "text/event-stream" }, signal: controller.signal });
    const bobsSession = (await answer(as(a!, bob.key)("/sessions", { method: "POST", body: "{}" }))).body.id as string;
    const hers = (await answer(as(a!, alice.key)("/sessions", { method: "POST", body: "{}" }))).body.id as string;
    cluster.llm().enqueue(reply().text("for bob").stop(), reply().text("for alice").stop());
    expect((await as(a!, bob.key)(`/sessions/${bobsSession}/chat`, { method: "POST", body: JSON.stringify({ message: "b" }) })).status).toBe(200);
    expect((await as(a!, alice.key)(`/sessions/${hers}/chat`, { method: "POST", body: JSON.stringify({ message: "a" }) })).status).toBe(200);
    const seen = await readSse(stream, { until: (m) => m.data?.type === "chat.done" && m.data.sessionId === hers });
    controller.abort();
    const sessions = new Set(seen.filter((m) => m.data).map((m) => m.data.sessionId));
    expect([...sessions]).toEqual([hers]);
    expect(seen.some((m) => m.data?.type === "chat.message" && m.data.role === "user")).toBe(true);
    // Node B answers Bob's session to Alice as a missing one.
    expect((await as(b!, alice.key)(`/sessions/${bobsSession}`)).status).toBe(404);
  });
});

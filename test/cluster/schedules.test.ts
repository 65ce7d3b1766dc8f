import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { reply } from "../helpers/fake-llm.js";
import { clusterHarness, eventually, json, post } from "../helpers/cluster.js";
import { withClient } from "../helpers/postgres.js";
import type { SpawnedServer } from "../helpers/spawned-server.js";
import { startWebhookReceiver } from "../helpers/webhook-receiver.js";

const cluster = clusterHarness("cluster/schedules.test");
const HOOK_SECRET = "cluster-hook-secret";

const query = <T = any>(sql: string, values: unknown[] = []) => withClient(cluster.where().url, async (client) => (await client.query(sql, values)).rows as T[]);

/** Disables every schedule and waits until no run is in flight anywhere. */
async function stopAll(node: SpawnedServer, ids: string[]): Promise<void> {
  for (const id of ids) await json(node.fetch(`/schedules/${id}`, { method: "PATCH", body: JSON.stringify({ enabled: false }) }));
  await eventually(async () => (await json(node.fetch("/schedules"))).schedules.every((s: { running: unknown }) => s.running === null), "every scheduled run to end");
}

describe.skipIf(!!cluster.unavailable)("schedules and webhooks on several nodes", () => {
  it("fires each due time of every schedule exactly once with two nodes on one PostgreSQL", async () => {
    // Leases long enough that a loaded machine's late heartbeat moves no session.
    const [a, b] = await cluster.start(2, { settings: { cluster: { leaseSeconds: 10 } } });
    cluster.llm().respond(() => reply().text("tick").stop());
    const ids: string[] = [];
    // Half created on each node: each arms its own at once and the other's at its next read of the rows.
    for (let i = 0; i < 12; i++) ids.push((await post(i % 2 ? b! : a!, "/schedules", { agent: "default", prompt: `job ${i}`, everySeconds: 1 })).id);
    // Long enough for both nodes to hold every schedule and race for its due times.
    await eventually(async () => {
      const counts = await query<{ n: number }>("SELECT count(*)::int AS n FROM schedule_runs GROUP BY schedule_id");
      return counts.length === ids.length && counts.every((c) => c.n >= 7);
    }, "seven due times of every schedule", 90_000);
    await stopAll(a!, ids);

    const doubles = await query("SELECT schedule_id, at, count(*)::int AS n FROM schedule_runs GROUP BY schedule_id, at HAVING count(*) > 1");
    expect(doubles).toEqual([]);
    const runs = await query<{ schedule_id: string; at: number; session_id: string | null; status: string; error: string | null }>("SELECT schedule_id, at, session_id, status, error FROM schedule_runs ORDER BY schedule_id, at");
    const ok = runs.filter((r) => r.status === "ok");
    expect(runs.filter((r) => r.status === "error")).toEqual([]);
    // One session and one model call per run that ran: none fired twice.
    const sessions = await query<{ id: string }>("SELECT id FROM sessions");
    expect(new Set(ok.map((r) => r.session_id)).size).toBe(ok.length);
    expect(sessions.map((s) => s.id).sort()).toEqual(ok.map((r) => r.session_id).sort());
    expect(cluster.llm().completionRequests).toHaveLength(ok.length);
    // Every schedule stayed on its one-second grid.
    for (const id of ids) {
      const times = runs.filter((r) => r.schedule_id === id).map((r) => Number(r.at));
      expect(times.length).toBeGreaterThanOrEqual(3);
      for (const at of times) expect((at - times[0]!) % 1000).toBe(0);
    }
    // Both nodes fired runs (the node that ran a session took its lease, and gave it up after the run).
    const owners = await query<{ node_id: string; held: number }>("SELECT node_id, count(*) FILTER (WHERE NOT released)::int AS held FROM leases GROUP BY node_id");
    expect(owners.length).toBe(2);
    expect(owners.map((o) => o.held)).toEqual([0, 0]);
  }, 180_000);

  it("takes over a schedule whose node was killed mid-run: the cut run is INTERRUPTED and the next ones run", async () => {
    const [a, b] = await cluster.start(2);
    let hold = true;
    cluster.llm().respond(() => (hold ? reply().waitFor(new Promise(() => undefined)).stop() : reply().text("after").stop()));
    const schedule = await post(a!, "/schedules", { agent: "default", prompt: "long job", everySeconds: 1 });
    const running = await eventually(async () => (await json(a!.fetch(`/schedules/${schedule.id}`))).running?.sessionId, "the first run to start");
    await cluster.llm().waitForRequests(1);
    hold = false;
    // Killed with its run in flight: only its mark in the store is left.
    await a!.kill();
    const runs = await eventually(async () => {
      const { runs } = await json(b!.fetch(`/schedules/${schedule.id}/runs`));
      return runs.some((r: { status: string }) => r.status === "ok") && runs;
    }, "a run on the surviving node", 60_000);
    const cut = runs.find((r: { sessionId: string }) => r.sessionId === running);
    expect(cut).toMatchObject({ status: "error", error: expect.stringMatching(/^INTERRUPTED: /) });
    const later = runs.filter((r: { at: string }) => Date.parse(r.at) > Date.parse(cut.at));
    expect(later.some((r: { status: string }) => r.status === "ok")).toBe(true);
    await stopAll(b!, [schedule.id]);
  }, 120_000);

  it("de-duplicates one inbound delivery sent to both nodes and sends each outbound event once", async () => {
    const receiver = await startWebhookReceiver({ secret: HOOK_SECRET });
    try {
      const [a, b] = await cluster.start(2, {
        settings: {
          webhooks: {
            in: { ci: { agent: "default", secretEnv: "HOOK_SECRET", prompt: "CI says {{body}}" } },
            out: [{ url: receiver.url, events: ["chat.done"], secretEnv: "HOOK_SECRET" }],
          },
        },
        env: { HOOK_SECRET },
      });
      cluster.llm().respond(() => reply().text("seen").stop());
      const body = JSON.stringify({ build: 7, status: "green" });
      const headers = { "x-veil-signature": `sha256=${createHmac("sha256", HOOK_SECRET).update(body).digest("hex")}`, "x-veil-delivery": "build-7", "content-type": "application/json" };
      const answers = await Promise.all([a!, b!, a!, b!].map((node) => fetch(`${node.url}/webhooks/ci`, { method: "POST", body, headers })));
      const sessionIds = await Promise.all(answers.map(async (res) => (expect(res.status).toBe(202), ((await res.json()) as { sessionId: string }).sessionId)));
      expect(new Set(sessionIds).size).toBe(1);
      // Three more chats, on either node: four chat.done events, each seen by both nodes.
      for (const node of [a!, b!, a!]) {
        const session = await post(node, "/sessions");
        await post(node, `/sessions/${session.id}/chat`, { message: "hi" });
      }
      await receiver.waitFor(4);
      await eventually(async () => (await json(b!.fetch("/webhooks/deliveries?status=delivered"))).deliveries.length === 4, "four deliveries to be marked delivered");
      expect(receiver.received).toHaveLength(4);
      expect(new Set(receiver.received.map((r) => r.body.deliveryId)).size).toBe(4);
      expect(receiver.received.every((r) => r.signed && r.body.type === "chat.done")).toBe(true);
      expect(receiver.received.map((r) => r.body.sessionId)).toContain(sessionIds[0]);
      expect(cluster.llm().completionRequests).toHaveLength(4);
    } finally {
      await receiver.close();
    }
  }, 60_000);
});

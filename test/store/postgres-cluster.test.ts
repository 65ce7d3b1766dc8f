import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import pg from "pg";
import type { ClusterSignal } from "../../src/store/cluster.js";
import { isClusterStore } from "../../src/store/cluster.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { reply } from "../helpers/fake-llm.js";
import { emptyDatabase, postgresUnavailable, withClient, startPostgres, type PostgresCluster } from "../helpers/postgres.js";
import { createRuntimeHarness } from "../helpers/runtime.js";

const unavailable = postgresUnavailable();
if (unavailable) console.warn(`[postgres-cluster.test] skipping: ${unavailable}`);

/** Collects signals and lets a test await the first one matching a predicate. */
function signalInbox() {
  const seen: ClusterSignal[] = [];
  const waiters: { match: (s: ClusterSignal) => boolean; resolve: (s: ClusterSignal) => void }[] = [];
  return {
    seen,
    push(signal: ClusterSignal) {
      seen.push(signal);
      for (const waiter of [...waiters]) {
        if (!waiter.match(signal)) continue;
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(signal);
      }
    },
    next(match: (s: ClusterSignal) => boolean): Promise<ClusterSignal> {
      const already = seen.find(match);
      if (already) return Promise.resolve(already);
      return new Promise((resolve) => waiters.push({ match, resolve }));
    },
  };
}

/** Resolves once some statement of the database waits for a row lock. */
async function waitForLockWait(url: string): Promise<void> {
  for (;;) {
    const rows = await withClient(url, async (c) => (await c.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'")).rows);
    if (rows.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.skipIf(!!unavailable)("PostgresStore as a ClusterStore (two nodes, two pools)", () => {
  let cluster: PostgresCluster;
  let url: string;
  let a: PostgresStore;
  let b: PostgresStore;
  beforeAll(async () => {
    cluster = await startPostgres();
    url = await cluster.createDatabase();
    await (await PostgresStore.open(url)).close();
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });
  beforeEach(async () => {
    await emptyDatabase(url);
    [a, b] = await Promise.all([PostgresStore.open(url), PostgresStore.open(url)]);
    await a.createSession({ id: "s1", agent: "default", mode: "chat" });
  });
  afterEach(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  it("is recognised as a cluster store", () => {
    expect(isClusterStore(a)).toBe(true);
  });

  describe("leases", () => {
    it("gives a session to one node while its lease lives, and bumps the generation on each change of hands", async () => {
      const first = await a.acquireLease("s1", "node-a", 60_000);
      expect(first).toMatchObject({ sessionId: "s1", nodeId: "node-a", generation: 1 });
      expect(first!.expiresAt).toBeGreaterThan(Date.now() + 50_000);
      expect(await b.acquireLease("s1", "node-b", 60_000)).toBeUndefined();
      expect(await a.acquireLease("s1", "node-a", 60_000)).toMatchObject({ generation: 1 });
      expect(await b.getLease("s1")).toMatchObject({ nodeId: "node-a", generation: 1, live: true, released: false });

      await a.releaseLease(first!);
      expect(await b.getLease("s1")).toMatchObject({ live: false, released: true });
      expect(await b.expiredLeases()).toEqual([]);
      const second = await b.acquireLease("s1", "node-b", 60_000);
      expect(second).toMatchObject({ nodeId: "node-b", generation: 2 });
      expect(await a.renewLease(first!, 60_000)).toBeUndefined();
      expect(await b.renewLease(second!, 60_000)).toMatchObject({ nodeId: "node-b", generation: 2 });
    });

    it("lists expired leases and lets another node take them over", async () => {
      await a.acquireLease("s1", "node-a", 60_000);
      const stale = await a.acquireLease("s2", "node-a", 0);
      expect((await b.expiredLeases()).map((l) => [l.sessionId, l.nodeId, l.generation])).toEqual([["s2", "node-a", 1]]);
      expect(await b.acquireLease("s2", "node-b", 60_000)).toMatchObject({ nodeId: "node-b", generation: 2 });
      expect(await b.expiredLeases()).toEqual([]);
      expect(await a.renewLease(stale!, 60_000)).toBeUndefined();
    });

    it("renews every lease of a node in one call (the heartbeat) and none of another's", async () => {
      await a.acquireLease("s1", "node-a", 0);
      await a.acquireLease("s2", "node-a", 0);
      await b.acquireLease("s3", "node-b", 0);
      const renewed = await a.renewLeases("node-a", 60_000);
      expect(renewed.map((l) => l.sessionId).sort()).toEqual(["s1", "s2"]);
      expect((await b.expiredLeases()).map((l) => l.sessionId)).toEqual(["s3"]);
    });
  });

  describe("lock order", () => {
    it("a fenced event batch takes its lease locks in session order, so a heartbeat locking them in that order never deadlocks with it", async () => {
      await a.createSession({ id: "s2", agent: "default", mode: "chat" });
      const l1 = (await a.acquireLease("s1", "node-a", 60_000))!;
      const l2 = (await a.acquireLease("s2", "node-a", 60_000))!;
      const heartbeat = new pg.Client({ connectionString: url });
      await heartbeat.connect();
      try {
        // A heartbeat half-way through its leases, in session order: s1 locked, s2 next.
        await heartbeat.query("BEGIN");
        await heartbeat.query("SET LOCAL deadlock_timeout = '100ms'");
        await heartbeat.query("UPDATE leases SET expires_at = expires_at WHERE session_id = 's1'");
        // A batch whose rows (and leases) come s2 first.
        const batch = a.appendEventsFenced(
          [
            { session_id: "s2", seq: 1, type: "session.state", ts: 1, data: "{}" },
            { session_id: "s1", seq: 1, type: "session.state", ts: 1, data: "{}" },
          ],
          [l2, l1],
        );
        await waitForLockWait(url);
        await heartbeat.query("UPDATE leases SET expires_at = expires_at WHERE session_id = 's2'");
        await heartbeat.query("COMMIT");
        expect((await batch).map((e) => e.session_id)).toEqual(["s2", "s1"]);
      } finally {
        await heartbeat.end();
      }
    });

    it("the heartbeat (renewLeases) takes its row locks in session order too, whatever order the rows lie in", async () => {
      await a.createSession({ id: "s2", agent: "default", mode: "chat" });
      // s2's row first in the table, so a plain scan would lock s2 before s1.
      await a.acquireLease("s2", "node-a", 60_000);
      await a.acquireLease("s1", "node-a", 60_000);
      const batch = new pg.Client({ connectionString: url });
      await batch.connect();
      try {
        // A fenced batch half-way through its share locks, in session order: s1 held, s2 next.
        await batch.query("BEGIN");
        await batch.query("SET LOCAL deadlock_timeout = '100ms'");
        await batch.query("SELECT 1 FROM leases WHERE session_id = 's1' FOR SHARE");
        const renewed = a.renewLeases("node-a", 60_000);
        await waitForLockWait(url);
        await batch.query("SELECT 1 FROM leases WHERE session_id = 's2' FOR SHARE");
        await batch.query("COMMIT");
        expect((await renewed).map((l) => l.sessionId).sort()).toEqual(["s1", "s2"]);
      } finally {
        await batch.end();
      }
    });
  });

  describe("fencing", () => {
    it("refuses the old owner's writes with LEASE_LOST after a takeover, and writes nothing", async () => {
      const leaseA = (await a.acquireLease("s1", "node-a", 60_000))!;
      const ownerA = a.fenced(leaseA);
      expect((await ownerA.appendMessage({ id: "m1", session_id: "s1", role: "user", content: "by A" })).seq).toBe(1);

      await a.renewLease(leaseA, 0); // A stalls: its lease runs out
      const leaseB = (await b.acquireLease("s1", "node-b", 60_000))!;
      const ownerB = b.fenced(leaseB);

      const refused = await ownerA.appendMessage({ id: "m2", session_id: "s1", role: "assistant", content: "late A" }).catch((e: { code?: string }) => e);
      expect((refused as { code?: string }).code).toBe("LEASE_LOST");
      // A batch that only partly belongs to the lost session is refused whole.
      const events = await ownerA.appendEvents([{ session_id: "other", seq: 1, type: "x", ts: 1, data: "{}" }, { session_id: "s1", seq: 1, type: "x", ts: 1, data: "{}" }]).catch((e: { code?: string }) => e);
      expect((events as { code?: string }).code).toBe("LEASE_LOST");
      expect((await ownerB.appendMessage({ id: "m3", session_id: "s1", role: "user", content: "by B" })).seq).toBe(2);
      expect((await b.listMessages("s1")).map((m) => m.id)).toEqual(["m1", "m3"]);
      expect(await b.listEventsGlobal()).toEqual([]);
      // Nor its run's other writes of the session: its next input, an audit row, a message's meta (compaction's pruned mark).
      const inboxItem = { id: "i0", session_id: "s1", content: "queued by A's run", meta: null, created_at: "2026-01-01T00:00:00.000Z" };
      const late = [
        ownerA.addInbox(inboxItem),
        ownerA.addAudit({ session_id: "s1", kind: "agent.summary", data: {} }),
        ownerA.updateMessageMeta("s1", "m1", { pruned: true }),
      ];
      expect((await Promise.allSettled(late)).map((o) => (o.status === "rejected" ? (o.reason as { code?: string }).code : "written"))).toEqual(["LEASE_LOST", "LEASE_LOST", "LEASE_LOST"]);
      expect(await b.listAudit({ sessionId: "s1" })).toEqual([]);
      expect((await b.getMessage("m1"))?.meta).toBeNull();
      // Anyone may still post to the session's inbox through the plain store (a chat any node receives).
      await a.addInbox({ id: "i1", session_id: "s1", content: "hi", meta: null, created_at: "2026-01-01T00:00:00.000Z" });
      expect((await b.listInbox("s1")).map((i) => i.id)).toEqual(["i1"]);
    });

    it("makes a takeover wait until a write admitted under the old lease has committed", async () => {
      const leaseA = (await a.acquireLease("s1", "node-a", 0))!;
      // Hold the fence the way an admitted write does, on a connection we control.
      const writer = new pg.Client({ connectionString: url });
      await writer.connect();
      await writer.query("BEGIN");
      await writer.query("SELECT 1 FROM leases WHERE session_id = $1 AND generation = $2 FOR SHARE", ["s1", leaseA.generation]);
      const { rows } = await writer.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      let settled = false;
      const takeover = b.acquireLease("s1", "node-b", 60_000).finally(() => (settled = true));
      // Wait (by polling the server's own view, not by time) until the takeover blocks on our lock.
      await withClient(url, async (c) => {
        for (;;) {
          const blocked = await c.query("SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))", [rows[0]!.pid]);
          if (blocked.rowCount) return;
        }
      });
      expect(settled).toBe(false);
      await writer.query("COMMIT");
      await writer.end();
      expect(await takeover).toMatchObject({ nodeId: "node-b", generation: 2 });
    });
  });

  describe("signals", () => {
    it("delivers inbox, event, control and remote-result signals to another node, only for committed rows", async () => {
      const inbox = signalInbox();
      const subscription = await a.subscribe((s) => inbox.push(s));

      await b.addInbox({ id: "i1", session_id: "s1", content: "hello", meta: null, created_at: "2026-01-01T00:00:00.000Z" });
      expect(await inbox.next((s) => s.kind === "inbox")).toEqual({ kind: "inbox", sessionId: "s1" });

      await b.appendEvents([{ session_id: "s1", seq: 1, type: "x", ts: 1, data: "{}" }]);
      await expect(b.appendEvents([{ session_id: "s1", seq: 2, type: "x", ts: 2, data: "{}" }, { session_id: "s1", seq: 1, type: "dup", ts: 2, data: "{}" }])).rejects.toBeDefined();
      const stored = await b.appendEvents([{ session_id: "s1", seq: 2, type: "x", ts: 2, data: "{}" }, { session_id: "s1", seq: 3, type: "x", ts: 3, data: "{}" }]);
      const last = await inbox.next((s) => s.kind === "events" && s.gseq === stored[1]!.gseq);
      expect(last).toEqual({ kind: "events", gseq: stored[1]!.gseq });
      expect(inbox.seen.filter((s) => s.kind === "events").map((s) => (s as { gseq: number }).gseq)).toEqual([1, stored[1]!.gseq]);

      await b.sendControl("s1", "cancel", { requestedBy: "node-b" });
      expect(await inbox.next((s) => s.kind === "control")).toEqual({ kind: "control", sessionId: "s1", action: "cancel", data: { requestedBy: "node-b" } });

      await a.addRemoteMethod({ id: "rm1", sessionId: "s1", nodeId: "node-a", method: "pick", data: '{"q":1}', createdAt: "2026-01-01T00:00:00.000Z" });
      expect(await b.resolveRemoteMethod("rm1", '"blue"')).toBe(true);
      expect(await inbox.next((s) => s.kind === "remote-result")).toEqual({ kind: "remote-result", id: "rm1", nodeId: "node-a" });
      await subscription.close();
    });

    it("re-listens after its connection is cut and says so, so the node can re-read", async () => {
      const inbox = signalInbox();
      let reconnected!: () => void;
      const back = new Promise<void>((resolve) => (reconnected = resolve));
      await a.subscribe((s) => inbox.push(s), { onReconnect: () => reconnected() });
      await withClient(url, (c) => c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'veil-listener' AND datname = current_database()"));
      await back;
      await b.sendControl("s1", "suspend");
      expect(await inbox.next((s) => s.kind === "control")).toEqual({ kind: "control", sessionId: "s1", action: "suspend" });
    });
  });

  describe("wake-up claims", () => {
    it("lets exactly one of many concurrent claimers on two nodes fire a due wake-up", async () => {
      const claims = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? a : b).claimWakeup("s1", 1_000, `node-${i}`)));
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(await a.claimWakeup("s1", 2_000, "node-a")).toBe(true);
      expect(await b.claimWakeup("s1", 2_000, "node-b")).toBe(false);
      expect(await b.claimWakeup("s2", 2_000, "node-b")).toBe(true);
    });
  });

  describe("remote methods", () => {
    const row = (id: string) => ({ id, sessionId: "s1", nodeId: "node-a", method: "confirm", data: "{}", createdAt: "2026-01-01T00:00:00.000Z" });

    it("lists pending methods of every node, lets the first answer win, and hands the result over once", async () => {
      await a.addRemoteMethod(row("rm1"));
      await a.addRemoteMethod(row("rm2"));
      expect((await b.listRemoteMethods()).map((m) => m.id)).toEqual(["rm1", "rm2"]);
      const answers = await Promise.all([a.resolveRemoteMethod("rm1", '"from a"'), b.resolveRemoteMethod("rm1", '"from b"')]);
      expect(answers.filter(Boolean)).toHaveLength(1);
      expect((await b.listRemoteMethods()).map((m) => m.id)).toEqual(["rm2"]);
      const taken = await a.takeRemoteResult("rm1");
      expect(['"from a"', '"from b"']).toContain(taken?.result);
      expect(await a.takeRemoteResult("rm1")).toBeUndefined();
      expect(await b.resolveRemoteMethod("rm1", '"late"')).toBe(false);
    });

    it("drops an unanswered method on timeout, but not one whose result already arrived", async () => {
      await a.addRemoteMethod(row("rm1"));
      await a.addRemoteMethod(row("rm2"));
      expect(await a.removeRemoteMethod("rm1")).toBe(true);
      expect(await b.resolveRemoteMethod("rm1", "1")).toBe(false);
      expect(await b.resolveRemoteMethod("rm2", "2")).toBe(true);
      expect(await a.removeRemoteMethod("rm2")).toBe(false);
      expect(await a.takeRemoteResult("rm2")).toEqual({ result: "2" });
    });
  });
});

describe.skipIf(!!unavailable)("a cluster node's heartbeat", () => {
  let cluster: PostgresCluster;
  let url: string;
  beforeAll(async () => {
    cluster = await startPostgres();
    url = await cluster.createDatabase();
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("does not take a lease acquired while its renewal statement ran for a lost one", async () => {
    const store = await PostgresStore.open(url);
    // The renewal's answer is held back once: a lease taken meanwhile is missing from it.
    let hold: { reached: () => void; release: Promise<void> } | null = null;
    let nextRenewal: (() => void) | null = null;
    const slowRenewal = new Proxy(store, {
      get(target, key, receiver) {
        if (key !== "renewLeases") return Reflect.get(target, key, receiver);
        return async (nodeId: string, ttlMs: number) => {
          nextRenewal?.();
          const renewed = await target.renewLeases(nodeId, ttlMs);
          const held = hold;
          hold = null;
          if (held) {
            held.reached();
            await held.release;
          }
          return renewed;
        };
      },
    });
    const h = await createRuntimeHarness({ store: slowRenewal, settings: { cluster: { leaseSeconds: 1.5 } } });
    try {
      h.llm.enqueue(reply().text("first").stop());
      const first = await h.runtime.sessions.create({ agent: "default" });
      await (await h.runtime.sessions.send(first.id, "hold a lease")).result;

      let release!: () => void;
      const reached = new Promise<void>((resolve) => (hold = { reached: resolve, release: new Promise<void>((r) => (release = r)) }));
      await reached;
      let answer!: () => void;
      h.llm.enqueue(reply().waitFor(new Promise<void>((r) => (answer = r))).text("second").stop());
      const second = await h.runtime.sessions.create({ agent: "default" });
      const receipt = await h.runtime.sessions.send(second.id, "take a lease now");
      await h.llm.waitForRequests(2);
      // Once the next heartbeat starts, the held one has judged every lease it knew.
      const judged = new Promise<void>((resolve) => (nextRenewal = resolve));
      release();
      await judged;
      answer();
      const result = await receipt.result;
      expect(result).toMatchObject({ stopReason: "stop", content: "second" });
      expect(h.log.entries.filter((e) => e.message.includes("lost the lease"))).toEqual([]);
    } finally {
      await h.close();
    }
  });
});

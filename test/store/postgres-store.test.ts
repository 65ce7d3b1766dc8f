import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { isVeilError } from "../../src/errors.js";
import { PG_MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import type { StoredEvent } from "../../src/store/store.js";
import { storeConformance } from "../conformance/store.js";
import { reply } from "../helpers/fake-llm.js";
import { emptyDatabase, postgresUnavailable, withClient, startPostgres, type PostgresCluster } from "../helpers/postgres.js";
import { createRuntimeHarness } from "../helpers/runtime.js";

const unavailable = postgresUnavailable();
if (unavailable) console.warn(`[postgres-store.test] skipping every PostgreSQL test: ${unavailable}`);
const suite = unavailable ? describe.skip : describe;

async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "expected a rejection").toBeInstanceOf(Error);
  return error as Error & { code?: string };
}

suite("PostgresStore", () => {
  let cluster: PostgresCluster;
  let shared: string;
  beforeAll(async () => {
    cluster = await startPostgres();
    shared = await cluster.createDatabase();
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  storeConformance("PostgresStore", async () => {
    const store = await PostgresStore.open(shared);
    await emptyDatabase(shared);
    return { store, reopen: async () => PostgresStore.open(shared), cleanup: async () => undefined };
  });

  // The same contract through a fenced view whose lease covers "s1", the suite's main
  // session: every s1 write takes the check-then-write transaction path.
  storeConformance("PostgresStore fenced to s1", async () => {
    const parents: PostgresStore[] = [];
    const fencedView = async () => {
      const parent = await PostgresStore.open(shared);
      parents.push(parent);
      const lease = await parent.acquireLease("s1", "node-a", 60_000);
      return parent.fenced(lease!);
    };
    const first = await PostgresStore.open(shared);
    await emptyDatabase(shared);
    await first.close();
    return { store: await fencedView(), reopen: fencedView, cleanup: async () => void (await Promise.all(parents.map((p) => p.close()))) };
  });

  describe("migrations", () => {
    it("applies each step once when several nodes start on an empty database at once", async () => {
      const url = await cluster.createDatabase();
      const stores = await Promise.all(Array.from({ length: 4 }, () => PostgresStore.open(url)));
      const versions = await withClient(url, async (c) => (await c.query("SELECT version FROM schema_migrations ORDER BY version")).rows.map((r) => r.version));
      expect(versions).toEqual(PG_MIGRATIONS.map((m) => m.version));
      await stores[0]!.createSession({ id: "s1", agent: "default", mode: "chat" });
      expect((await stores[3]!.getSession("s1"))?.id).toBe("s1");
      await Promise.all(stores.map((s) => s.close()));
    });

    it("refuses a database migrated by a newer veil with CONFIG_ERROR", async () => {
      const url = await cluster.createDatabase();
      await (await PostgresStore.open(url)).close();
      await withClient(url, (c) => c.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'x')"));
      const error = await rejection(PostgresStore.open(url));
      expect(error.code).toBe("CONFIG_ERROR");
      expect(error.message).toContain("999");
    });
  });

  describe("bad URLs and unreachable servers", () => {
    it("rejects a URL that is not postgres:// with CONFIG_ERROR and hides the password", async () => {
      const error = await rejection(PostgresStore.open("mysql://admin:hunter2@db.example/app"));
      expect(isVeilError(error) && error.code).toBe("CONFIG_ERROR");
      expect(error.message).toContain("mysql://admin:***@db.example/app");
      expect(error.message).not.toContain("hunter2");
    });

    it("names the URL, password hidden, when the database does not exist", async () => {
      const url = cluster.urlFor("no_such_db").replace("secret-pw", "hunter2");
      const error = await rejection(PostgresStore.open(url));
      expect(error.code).toBe("CONFIG_ERROR");
      expect(error.message).toContain(`postgres://postgres:***@127.0.0.1:${cluster.port}/no_such_db`);
      expect(error.message).toContain("does not exist");
      expect(error.message).not.toContain("hunter2");
    });

    it("retries, then answers STORE_UNAVAILABLE naming the URL when nothing listens", async () => {
      const closed = await closedPort();
      const warnings: string[] = [];
      const log = { debug() {}, info() {}, error() {}, warn: (message: string) => void warnings.push(message) };
      const error = await rejection(
        PostgresStore.open(`postgres://veil:hunter2@127.0.0.1:${closed}/veil`, { log, retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 } }),
      );
      expect(error.code).toBe("STORE_UNAVAILABLE");
      expect(error.message).toContain(`postgres://veil:***@127.0.0.1:${closed}/veil`);
      expect(error.message).not.toContain("hunter2");
      expect(warnings.filter((w) => w.includes("retrying"))).toHaveLength(2);
    });
  });

  it("assigns gseq and resolves concurrent appendEvents calls in call order, as SQLite does", async () => {
    const url = await cluster.createDatabase();
    const store = await PostgresStore.open(url);
    const resolved: string[] = [];
    const calls = Array.from({ length: 20 }, (_, i) =>
      store.appendEvents([{ session_id: `s${i}`, seq: 1, type: "x", ts: i, data: "{}" }]).then((rows) => {
        resolved.push(rows[0]!.session_id);
        return rows[0]!.gseq;
      }),
    );
    const gseqs = await Promise.all(calls);
    expect(gseqs).toEqual([...gseqs].sort((x, y) => x - y));
    expect(resolved).toEqual(Array.from({ length: 20 }, (_, i) => `s${i}`));
    await store.close();
  });

  describe("two nodes on one database", () => {
    it("keeps message seq gap-free when both append to one session at once", async () => {
      const url = await cluster.createDatabase();
      const [a, b] = await Promise.all([PostgresStore.open(url), PostgresStore.open(url)]);
      await a.createSession({ id: "s1", agent: "default", mode: "chat" });
      await Promise.all(
        Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).appendMessage({ id: `m${i}`, session_id: "s1", role: "user", content: `${i}` })),
      );
      expect((await b.listMessages("s1")).map((m) => m.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
      await Promise.all([a.close(), b.close()]);
    });

    it("lets a reader paging by gseq miss no event while two nodes append", async () => {
      const url = await cluster.createDatabase();
      const [a, b, reader] = await Promise.all([PostgresStore.open(url), PostgresStore.open(url), PostgresStore.open(url)]);
      const batches = 60;
      let writing = true;
      const write = async (store: PostgresStore, sessionId: string) => {
        for (let i = 0; i < batches; i++) {
          await store.appendEvents([
            { session_id: sessionId, seq: 2 * i + 1, type: "x", ts: i, data: `{"i":${i}}` },
            { session_id: sessionId, seq: 2 * i + 2, type: "y", ts: i, data: `{"i":${i}}` },
          ]);
        }
      };
      const seen: StoredEvent[] = [];
      const poll = async () => {
        let after = 0;
        // One more page after the writers stop, so the tail is read too.
        for (let last = false; ; last = !writing) {
          const page = await reader.listEventsGlobal({ after });
          seen.push(...page);
          after = page.at(-1)?.gseq ?? after;
          if (last) return;
        }
      };
      const polling = poll();
      await Promise.all([write(a, "sa"), write(b, "sb")]);
      writing = false;
      await polling;
      const gseqs = seen.map((e) => e.gseq);
      expect(gseqs).toEqual([...gseqs].sort((x, y) => x - y));
      expect(new Set(gseqs).size).toBe(4 * batches);
      for (const sessionId of ["sa", "sb"]) {
        expect(seen.filter((e) => e.session_id === sessionId).map((e) => e.seq)).toEqual(Array.from({ length: 2 * batches }, (_, i) => i + 1));
      }
      await Promise.all([a.close(), b.close(), reader.close()]);
    });
  });

  it("runs a chat with a tool call end to end when VEIL_DATABASE_URL selects it", async () => {
    const url = await cluster.createDatabase();
    const h = await createRuntimeHarness({ env: { VEIL_DATABASE_URL: url } });
    try {
      expect(h.runtime.store).toBeInstanceOf(PostgresStore);
      h.llm.enqueue(reply().tool("log_write", { message: "noted", level: "info" }).stop());
      h.llm.enqueue(reply().text("done").stop());
      const session = await h.runtime.sessions.create({ agent: "default" });
      const result = await (await h.runtime.sessions.send(session.id, "go")).result;
      expect(result.content).toBe("done");
      const check = await PostgresStore.open(url);
      const messages = await check.listMessages(session.id);
      expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
      expect((await check.listToolCalls(session.id)).map((c) => c.state)).toEqual(["done"]);
      await check.close();
    } finally {
      await h.close();
    }
  });
});

async function closedPort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { postgresUnavailable, startPostgres, type PostgresCluster } from "../helpers/postgres.js";

const unavailable = postgresUnavailable();
if (unavailable) console.warn(`[postgres-outage.test] skipping: ${unavailable}`);

/** Stops and restarts the server under an open store: its own cluster, so no other file notices. */
describe.skipIf(!!unavailable)("PostgresStore when the database goes down mid-run", () => {
  let cluster: PostgresCluster;
  beforeAll(async () => {
    cluster = await startPostgres();
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("answers STORE_UNAVAILABLE naming the URL while down, waits with backoff, and carries on when it is back", async () => {
    const url = await cluster.createDatabase();
    let onRetry: (() => void) | undefined;
    const warnings: string[] = [];
    const log = {
      debug() {},
      info() {},
      error() {},
      warn(message: string) {
        warnings.push(message);
        if (message.includes("retrying")) onRetry?.();
      },
    };
    const store = await PostgresStore.open(url, { log, retry: { attempts: 3, baseDelayMs: 5, maxDelayMs: 20 } });
    await store.createSession({ id: "s1", agent: "default", mode: "chat" });
    await store.appendMessage({ id: "m1", session_id: "s1", role: "user", content: "before" });

    await cluster.pause();
    const down = await store.appendMessage({ id: "m2", session_id: "s1", role: "user", content: "lost?" }).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(down?.code).toBe("STORE_UNAVAILABLE");
    expect(down?.message).toContain(`postgres://postgres:***@127.0.0.1:${cluster.port}/`);
    expect(down?.message).not.toContain("secret-pw");
    await cluster.resume();

    // A write issued while down waits in the checkout backoff; the server returns on the first retry.
    const patient = await PostgresStore.open(url, { log, retry: { attempts: 100, baseDelayMs: 20, maxDelayMs: 200 } });
    await patient.getSession("s1");
    await cluster.pause();
    const resumed = new Promise<void>((resolve) => {
      onRetry = () => {
        onRetry = undefined;
        void cluster.resume().then(resolve);
      };
    });
    const row = await patient.appendMessage({ id: "m3", session_id: "s1", role: "user", content: "after" });
    await resumed;
    expect(row.seq).toBe(2);

    // The first store's pool lost its connections too; it reconnects on its own.
    expect((await store.listMessages("s1")).map((m) => m.id)).toEqual(["m1", "m3"]);
    expect(warnings.some((w) => w.includes("retrying"))).toBe(true);
    await Promise.all([store.close(), patient.close()]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { isVeilError } from "../../src/errors.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { PG_MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { storeConformance } from "../conformance/store.js";
import { postgresUnavailable, startPostgres, type PostgresCluster } from "../helpers/postgres.js";

const unavailable = postgresUnavailable();
if (unavailable) console.warn(`[postgres-store.test] skipping every PostgreSQL test: ${unavailable}`);
const suite = unavailable ? describe.skip : describe;

suite("PostgresStore", () => {
  let cluster: PostgresCluster;
  beforeAll(async () => {
    cluster = await startPostgres();
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  storeConformance("PostgresStore", async () => {
    const url = await cluster.createDatabase();
    return {
      store: await PostgresStore.open(url),
      reopen: async () => PostgresStore.open(url),
      cleanup: async () => undefined,
    };
  });
});

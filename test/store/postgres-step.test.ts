import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { BUDGET_RECHECK_MS, INBOX_RECHECK_MS } from "../../src/core/change-watch.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { reply } from "../helpers/fake-llm.js";
import { postgresUnavailable, startPostgres, type PostgresCluster } from "../helpers/postgres.js";
import { createRuntimeHarness } from "../helpers/runtime.js";

const unavailable = postgresUnavailable();
if (unavailable) console.warn(`[postgres-step.test] skipping every PostgreSQL test: ${unavailable}`);
const suite = unavailable ? describe.skip : describe;

/** Names of the prepared statements the store's pool runs, in the order they are sent, when, and when each one's reply came. */
function recordStatements(store: PostgresStore): { names: string[]; times: number[]; replies: number[] } {
  const names: string[] = [];
  const times: number[] = [];
  const replies: number[] = [];
  const pool = (store as unknown as { db: { pool: pg.Pool } }).db.pool;
  const hooked = new WeakSet<pg.PoolClient>();
  pool.on("acquire", (client) => {
    if (hooked.has(client)) return;
    hooked.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const first = args[0] as { name?: string } | string;
      names.push(typeof first === "object" && first.name ? first.name : "(text)");
      times.push(performance.now());
      const at = replies.push(Number.POSITIVE_INFINITY) - 1;
      const sent = query(...args);
      if (sent instanceof Promise) void sent.then(() => (replies[at] = performance.now()), () => (replies[at] = performance.now()));
      return sent;
    };
  });
  return { names, times, replies };
}

suite("PostgreSQL: statements on a loop step's path", () => {
  let cluster: PostgresCluster;
  beforeAll(async () => {
    cluster = await startPostgres();
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("a tool step (assistant row → tool → result → next call) sends only the statements it needs", async () => {
    const url = await cluster.createDatabase();
    const h = await createRuntimeHarness({ env: { VEIL_DATABASE_URL: url } });
    try {
      const store = h.runtime.store as PostgresStore;
      for (let i = 0; i < 4; i++) h.llm.enqueue(reply().tool("log_write", { message: `step ${i}`, level: "info" }).stop());
      h.llm.enqueue(reply().text("done").stop());
      const session = await h.runtime.sessions.create({ agent: "default" });
      const { names, times, replies } = recordStatements(store);
      const result = await (await h.runtime.sessions.send(session.id, "go")).result;
      expect(result.content).toBe("done");
      const steps = names.flatMap((name, i) => (name.startsWith("appendAssistantStep") ? [i] : []));
      expect(steps).toHaveLength(5);
      // One whole step: from the second assistant row to the third; events go out off the path.
      let step = names.slice(steps[1], steps[2]).filter((name) => !name.startsWith("appendEvents"));
      // A step slower than the inbox's or the budget's recheck interval (a loaded machine) reads it once more, as it should.
      const stepMs = times[steps[2]!]! - times[steps[1]!]!;
      const once = (read: string) => (name: string, i: number) => name !== read || step.indexOf(read) !== i;
      if (stepMs >= INBOX_RECHECK_MS) step = step.filter(once("listInbox"));
      if (stepMs >= BUDGET_RECHECK_MS) step = step.filter(once("getSession"));
      console.log(`[postgres-step.test] statements per step: ${step.join(", ")}`);
      expect(step).toEqual(STEP_STATEMENTS);
      // The call runs while its "executing" state is on the wire: the tool's audit row is sent before that reply, the result after it.
      const state = names.indexOf("setToolCallStateFenced", steps[1]);
      const audit = names.indexOf("addAuditFenced", steps[1]);
      const resultRow = names.indexOf("recordToolResultFenced", steps[1]);
      expect(times[audit]!).toBeLessThan(replies[state]!);
      expect(times[resultRow]!).toBeGreaterThanOrEqual(replies[state]!);
      const row = await store.getSession(session.id);
      expect(row?.token_usage.total_tokens).toBe(result.usage.total_tokens);
    } finally {
      await h.close();
    }
  });
});

/**
 * The call's usage rides on the assistant row's statement (no addTokenUsage of its own); with
 * no PreToolUse hook the call goes pending → executing (no "validating" write); the boundary
 * reads the inbox only after an arrival (none here); the budget before the next model call
 * comes from the row the run started with, re-read only after an update-session (no getSession).
 * The tool's audit row checks the lease inside its own statement. The "executing" state is
 * not awaited before the tool runs (only before the call's result row), so the state and the
 * tool's audit row are in flight together: three round trips in a row per step, not four.
 */
const STEP_STATEMENTS = ["appendAssistantStepFenced", "setToolCallStateFenced", "addAuditFenced", "recordToolResultFenced"];

/**
 * A node whose lease on a session was taken writes nothing more of that session: not the
 * todos a tool sets, not a compaction's rows, not any event. Every write of a run goes
 * through its recorder and the run's fenced store, on a real PostgreSQL.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Type } from "../../src/schema.js";
import { allBuiltinTools } from "../../src/core/builtins.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { defineTool } from "../../src/tools/define.js";
import { scheduleWakeup } from "../../src/tools/builtin/schedule-wakeup.js";
import type { ToolContext } from "../../src/tools/types.js";
import { agentControl } from "../../src/core/agents/tools/agent-control.js";
import { agentMessage } from "../../src/core/agents/tools/agent-message.js";
import { agentSpawn } from "../../src/core/agents/tools/agent-spawn.js";
import { recordContact } from "../../src/core/agents/counters.js";
import { httpError, reply } from "../helpers/fake-llm.js";
import { emptyDatabase, postgresUnavailable, startPostgres, withClient, type PostgresCluster } from "../helpers/postgres.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { createAgentsHarness, deferred as deferredOf, tag } from "../core/agents/harness.js";

const unavailable = postgresUnavailable();

/** A tool that waits until the test lets it go, then (`writes`) sets its session's todos and publishes todo.updated. */
function heldTool(writes: boolean, as: { name?: string; reaches?: () => string; then?: (ctx: ToolContext) => Promise<unknown> } = {}) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const started = new Promise<void>((resolve) => (entered = resolve));
  const seen: { todos?: string; event?: string; then?: string } = {};
  const tool = defineTool({
    name: as.name ?? "held_tool",
    description: "waits, then sets the todos",
    params: Type.Object({}),
    ...(as.reaches ? { reaches: as.reaches } : {}),
    async execute(_input, ctx) {
      entered();
      await released;
      if (as.then) seen.then = await as.then(ctx).then(
        () => "written",
        (error: { code?: string }) => error.code ?? String(error),
      );
      if (!writes) return "done";
      const todos = [{ id: "t1", content: "written by a node that lost the session", status: "pending" as const, priority: "high" as const }];
      seen.todos = await ctx.todos.set(todos).then(
        () => "written",
        (error: { code?: string }) => error.code ?? String(error),
      );
      await ctx.emit({ type: "todo.updated", todos });
      seen.event = "published";
      return "done";
    },
  });
  return { tool, started, release, seen };
}

function deferred(): { promise: Promise<void>; resolve(): void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** What the database holds of a session (read on a connection of its own). */
async function stored(url: string, sessionId: string) {
  return withClient(url, async (client) => ({
    todos: (await client.query("SELECT * FROM todos WHERE session_id = $1", [sessionId])).rows,
    summaries: (await client.query("SELECT id FROM messages WHERE session_id = $1 AND kind = 'summary'", [sessionId])).rows,
    toolRows: (await client.query("SELECT id FROM messages WHERE session_id = $1 AND role = 'tool'", [sessionId])).rows,
    compacted: (await client.query("SELECT id FROM messages WHERE session_id = $1 AND compacted", [sessionId])).rows,
    eventTypes: (await client.query("SELECT type FROM events WHERE session_id = $1 ORDER BY gseq", [sessionId])).rows.map((r) => r.type as string),
    wakeups: (await client.query("SELECT session_id FROM wakeups WHERE session_id = $1", [sessionId])).rows,
    metaKeys: (await client.query("SELECT key FROM session_meta WHERE session_id = $1 ORDER BY key", [sessionId])).rows.map((r) => r.key as string),
  }));
}

/** Another node takes the session: the lease row changes hands with the next generation. */
async function takeLease(url: string, sessionId: string): Promise<void> {
  await withClient(url, (client) =>
    client.query("UPDATE leases SET node_id = 'another-node', generation = generation + 1, expires_at = clock_timestamp() + interval '1 hour' WHERE session_id = $1", [sessionId]),
  );
}

describe.skipIf(!!unavailable)("a node whose lease was taken (real PostgreSQL)", () => {
  let pgCluster: PostgresCluster;
  let url: string;
  let h: RuntimeHarness | undefined;
  beforeAll(async () => {
    pgCluster = await startPostgres();
    url = await pgCluster.createDatabase();
    await (await PostgresStore.open(url)).close();
  }, 120_000);
  afterAll(async () => {
    await pgCluster?.stop();
  });
  beforeEach(async () => {
    await emptyDatabase(url);
  });
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("cannot write the todos its tool sets, nor the events the tool and the run publish", async () => {
    const held = heldTool(true);
    // A long lease: only the fenced writes can find out it was taken, not the heartbeat.
    h = await createRuntimeHarness({ store: await PostgresStore.open(url), builtins: [...allBuiltinTools(), held.tool], settings: { cluster: { leaseSeconds: 600 } } });
    const { sessions } = h.runtime;
    const session = await sessions.create({ agent: "default" });
    h.llm.enqueue(reply().tool("held_tool", {}).stop(), reply().text("not reached").stop());
    const sent = await sessions.send(session.id, "set the todos");
    await held.started;
    await h.runtime.events.flush();
    const before = await stored(url, session.id);
    expect(before.eventTypes).toContain("tool.start");

    await takeLease(url, session.id);
    held.release();
    const result = await sent.result;
    await sessions.waitIdle(session.id);
    await h.runtime.events.flush();

    // The tool's write was refused, and that stopped the run.
    expect(held.seen.todos).toBe("LEASE_LOST");
    expect(held.seen.event).toBe("published");
    expect(result.error?.code).toBe("LEASE_LOST");
    const after = await stored(url, session.id);
    expect(after.todos).toEqual([]);
    expect(after.toolRows).toEqual([]);
    // Not one event of the session was stored after the takeover (no todo.updated, tool.end, chat.done).
    expect(after.eventTypes).toEqual(before.eventTypes);
    expect(h.llm.completionRequests).toHaveLength(1);
  }, 60_000);

  it("cannot write a compaction's rows or its session.compacted event", async () => {
    const held = heldTool(false);
    h = await createRuntimeHarness({
      store: await PostgresStore.open(url),
      builtins: [...allBuiltinTools(), held.tool],
      settings: { cluster: { leaseSeconds: 600 }, defaultCompaction: { keepRecentTokens: 50 } },
    });
    const { sessions } = h.runtime;
    const session = await sessions.create({ agent: "default" });
    h.llm.enqueue(reply().text(`${"an old answer worth summarising ".repeat(300)}`).stop());
    await (await sessions.send(session.id, "say a lot")).result;

    // The next run holds at its tool while a manual compaction is asked for; the compaction
    // runs at the run's next boundary, and the session changes hands during its summarizer call.
    const summarizer = deferred();
    h.llm.enqueue(reply().tool("held_tool", {}).stop(), reply().waitFor(summarizer.promise).text("## Goal\nsummarised").stop(), reply().text("not reached").stop());
    const sent = await sessions.send(session.id, "now compact");
    await held.started;
    const compaction = sessions.compact(session.id).then(
      (outcome) => outcome,
      (error: { code?: string }) => error.code ?? String(error),
    );
    held.release();
    await h.llm.waitForRequests(3);
    await h.runtime.events.flush();
    const before = await stored(url, session.id);
    expect(before.toolRows).toHaveLength(1);

    await takeLease(url, session.id);
    summarizer.resolve();
    const outcome = await compaction;
    expect(outcome).toBe("LEASE_LOST");
    await sent.result;
    await sessions.waitIdle(session.id);
    await h.runtime.events.flush();

    const after = await stored(url, session.id);
    expect(after.summaries).toEqual([]);
    expect(after.compacted).toEqual(before.compacted);
    expect(after.eventTypes).toEqual(before.eventTypes);
    expect(after.eventTypes).not.toContain("session.compacted");
  }, 60_000);

  it("cannot write an idle session's compaction either (the owner that has not noticed yet)", async () => {
    h = await createRuntimeHarness({ store: await PostgresStore.open(url), settings: { cluster: { leaseSeconds: 600 }, defaultCompaction: { keepRecentTokens: 50 } } });
    const { sessions } = h.runtime;
    const session = await sessions.create({ agent: "default" });
    h.llm.enqueue(reply().text(`${"an old answer worth summarising ".repeat(300)}`).stop());
    await (await sessions.send(session.id, "say a lot")).result;
    h.llm.enqueue(reply().text("short").stop());
    await (await sessions.send(session.id, "and now?")).result;
    await h.runtime.events.flush();
    const before = await stored(url, session.id);

    // This node still believes it holds the session; its compaction's writes check the lease.
    await takeLease(url, session.id);
    h.llm.enqueue(reply().text("## Goal\nsummarised").stop());
    expect(await sessions.compact(session.id).catch((error: { code?: string }) => error.code)).toBe("LEASE_LOST");
    await h.runtime.events.flush();
    const after = await stored(url, session.id);
    expect(after.summaries).toEqual([]);
    expect(after.compacted).toEqual([]);
    expect(after.eventTypes).toEqual(before.eventTypes);
  }, 60_000);

  it("cannot mark old tool outputs pruned (a compaction whose summarizer failed writes only those marks)", async () => {
    h = await createRuntimeHarness({ store: await PostgresStore.open(url), settings: { cluster: { leaseSeconds: 600 }, defaultCompaction: { keepRecentTokens: 50 } } });
    const { sessions } = h.runtime;
    const big = { command: "head -c 20000 /dev/zero | tr '\\0' x" };
    /** A session with two large bash outputs, then a short turn, so both outputs lie outside the kept tail. */
    const withOldOutputs = async () => {
      const session = await sessions.create({ agent: "default" });
      h!.llm.enqueue(reply().tool("bash", big).stop(), reply().tool("bash", big).stop(), reply().text("listed").stop());
      await (await sessions.send(session.id, "print a lot")).result;
      h!.llm.enqueue(reply().text("short").stop());
      await (await sessions.send(session.id, "and now?")).result;
      return session.id;
    };
    const prunedRows = (sessionId: string) =>
      withClient(url, async (client) => (await client.query("SELECT id FROM messages WHERE session_id = $1 AND meta LIKE '%\"pruned\":true%'", [sessionId])).rows);

    // The control: on the node that holds the session, the failed summary leaves the prune marks.
    const kept = await withOldOutputs();
    h.llm.enqueue(httpError(400));
    await sessions.compact(kept);
    expect(await prunedRows(kept)).toHaveLength(2);

    const taken = await withOldOutputs();
    await h.runtime.events.flush();
    const before = await stored(url, taken);
    await takeLease(url, taken);
    h.llm.enqueue(httpError(400));
    expect(await sessions.compact(taken).catch((error: { code?: string }) => error.code)).toBe("LEASE_LOST");
    await h.runtime.events.flush();
    expect(await prunedRows(taken)).toEqual([]);
    expect((await stored(url, taken)).eventTypes).toEqual(before.eventTypes);
  }, 60_000);

  it("cannot mark a drained msg#2+ as coincided when its run ends after the takeover", async () => {
    const held = heldTool(false);
    const agents = await createAgentsHarness({ store: await PostgresStore.open(url), builtins: [...allBuiltinTools(), held.tool], settings: { cluster: { leaseSeconds: 600 } } });
    h = agents;
    const a = await agents.bossSession();
    const b = await agents.bossSession();
    const spawned = await agents.call(agentSpawn, a, { agent: "worker", instance_name: "w", objective: "OBJ-lease" });
    const w = tag(spawned.output, "session-id")!;
    const gate = deferredOf();
    // msg#1 starts the run; msg#2+ is drained at the boundary after log_write; the run then holds at held_tool.
    agents.worker("OBJ-lease").enqueue(reply().waitFor(gate.promise).tool("log_write", { message: "working" }).stop(), reply().tool("held_tool", {}).stop(), reply().text("not reached").stop());
    expect((await agents.call(agentMessage, a, { sessionId: w, message: "task", async_inform: true })).details?.dispatchRole).toBe("msg#1");
    await agents.llm.waitForRequests(1);
    expect((await agents.call(agentMessage, b, { sessionId: w, message: "also this", async_inform: true })).details?.dispatchRole).toBe("msg#2+");
    gate.resolve();
    await held.started;
    const follower = (await agents.messages(w)).find((m) => m.content === `[Message from boss (session: ${b})]: also this`)!;
    expect(follower.meta).toMatchObject({ dispatch_role: "msg#2+" });

    // The run ends LEASE_LOST with msg#1 consumed: the coincide rule applies to msg#2+, but its mark is the run's write.
    await takeLease(url, w);
    held.release();
    await agents.runtime.sessions.waitIdle(w);
    await agents.service.delivery.settled();
    const after = await withClient(url, async (client) => (await client.query("SELECT meta FROM messages WHERE id = $1", [follower.id])).rows[0].meta as string);
    expect(JSON.parse(after)).toEqual(follower.meta);
    expect(JSON.parse(after).coincided).toBeUndefined();
  }, 60_000);

  /** A run whose one call (`held`) ends after another node took the session; the run ends LEASE_LOST. Returns the session's id. */
  async function endHeldCallAfterTakeover(held: ReturnType<typeof heldTool>, files: Record<string, string> = {}, sessionId?: string): Promise<string> {
    h ??= await createRuntimeHarness({ store: await PostgresStore.open(url), builtins: [...allBuiltinTools(), held.tool], settings: { cluster: { leaseSeconds: 600 } }, files });
    const { sessions } = h.runtime;
    const session = sessionId ? await sessions.get(sessionId) : await sessions.create({ agent: "default" });
    h.llm.enqueue(reply().tool(held.tool.name, {}).stop(), reply().text("not reached").stop());
    const sent = await sessions.send(session.id, "go");
    await held.started;
    await takeLease(url, session.id);
    held.release();
    expect((await sent.result).error?.code).toBe("LEASE_LOST");
    await sessions.waitIdle(session.id);
    return session.id;
  }

  it("cannot mark the nested AGENTS.md it gave with a file tool's result", async () => {
    // A file tool: its result reaches sub/, whose AGENTS.md it would carry.
    const held = heldTool(false, { name: "held_reader", reaches: () => "sub/notes.txt" });
    // The tool ends after the takeover: marking sub/AGENTS.md as given is the run's write, refused.
    const session = await endHeldCallAfterTakeover(held, { "sub/AGENTS.md": "sub rules", "sub/notes.txt": "notes" });
    const after = await stored(url, session);
    expect(after.metaKeys).not.toContain("nestedInstructions");
    expect(after.toolRows).toEqual([]);
  }, 60_000);

  it("cannot arm the wake-up schedule_wakeup sets", async () => {
    // The tool ends after the takeover by calling schedule_wakeup with its own context.
    const held = heldTool(false, { then: (ctx) => scheduleWakeup.execute({ time: "1h", message: "check again" }, ctx) });
    const session = await endHeldCallAfterTakeover(held);
    expect(held.seen.then).toBe("LEASE_LOST");
    expect((await stored(url, session)).wakeups).toEqual([]);
  }, 60_000);

  it("cannot change its child's budget or its contact marks on the child (writes of another session)", async () => {
    const refused: string[] = [];
    let childId = "";
    const held = heldTool(false, {
      then: async (ctx) => {
        const control = agentControl.execute({ sessionId: childId, action: "update-session", params: { budget_override: { max_iterations: 3 } } }, ctx);
        const contact = recordContact(h!.runtime.store, ctx.otherSessions, childId, ctx.sessionId, new Date().toISOString());
        for (const outcome of await Promise.allSettled([control, contact])) refused.push(outcome.status === "rejected" ? ((outcome.reason as { code?: string }).code ?? String(outcome.reason)) : "written");
      },
    });
    h = await createRuntimeHarness({ store: await PostgresStore.open(url), builtins: [...allBuiltinTools(), held.tool], settings: { cluster: { leaseSeconds: 600 } } });
    const caller = await h.runtime.sessions.create({ agent: "default" });
    childId = (await h.runtime.sessions.create({ agent: "default", parent_session_id: caller.id, spawn_depth: 1, instance_name: "child" })).id;

    await endHeldCallAfterTakeover(held, {}, caller.id);
    expect(refused).toEqual(["LEASE_LOST", "LEASE_LOST"]);
    const child = await withClient(url, async (client) => (await client.query("SELECT budget_override FROM sessions WHERE id = $1", [childId])).rows[0]);
    expect(child.budget_override).toBeNull();
    expect((await stored(url, childId)).metaKeys).toEqual([]);
  }, 60_000);

  it("cannot write the agent.summary audit row of its child's summary", async () => {
    let childId = "";
    const held = heldTool(false, { then: (ctx) => agentControl.execute({ sessionId: childId, action: "get-summary" }, ctx) });
    h = await createRuntimeHarness({ store: await PostgresStore.open(url), builtins: [...allBuiltinTools(), held.tool], settings: { cluster: { leaseSeconds: 600 } } });
    const caller = await h.runtime.sessions.create({ agent: "default" });
    childId = (await h.runtime.sessions.create({ agent: "default", parent_session_id: caller.id, spawn_depth: 1, instance_name: "child" })).id;

    // The summarizer's call takes the harness's second reply; the audit row after it is refused.
    await endHeldCallAfterTakeover(held, {}, caller.id);
    expect(held.seen.then).toBe("LEASE_LOST");
    const audit = await withClient(url, async (client) => (await client.query("SELECT kind FROM audit WHERE session_id = $1", [childId])).rows);
    expect(audit).toEqual([]);
  }, 60_000);

  it("cannot revert a turn of the session: neither its rows' flags nor its files", async () => {
    h = await createRuntimeHarness({ store: await PostgresStore.open(url), settings: { cluster: { leaseSeconds: 600 } } });
    const { sessions } = h.runtime;
    const session = await sessions.create({ agent: "default" });
    h.llm.enqueue(reply().tool("bash", { command: "echo made > made.txt" }).stop(), reply().text("done").stop());
    await (await sessions.send(session.id, "make a file")).result;
    const turn = (await h.runtime.store.listMessages(session.id)).find((row) => row.role === "user")!;
    expect(existsSync(join(h.ws.root, "made.txt"))).toBe(true);

    // This node still believes it holds the session; the revert's writes check the lease.
    await takeLease(url, session.id);
    expect(await sessions.revert(session.id, turn.id).catch((error: { code?: string }) => error.code)).toBe("LEASE_LOST");
    expect(existsSync(join(h.ws.root, "made.txt"))).toBe(true);
    const flags = await withClient(url, async (client) => (await client.query("SELECT count(*)::int AS n FROM messages WHERE session_id = $1 AND reverted", [session.id])).rows[0].n);
    expect(flags).toBe(0);
    expect(await h.runtime.store.listCheckpoints(session.id, { kind: "revert" })).toEqual([]);
  }, 60_000);
});

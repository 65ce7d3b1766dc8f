import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { memoryLogger } from "../src/base/log.js";
import { createRuntime, type Runtime } from "../src/runtime.js";
import { PostgresStore } from "../src/store/postgres/postgres-store.js";
import { reply, startFakeLlm, type FakeLlm } from "../test/helpers/fake-llm.js";
import { postgresUnavailable, startPostgres } from "../test/helpers/postgres.js";
import { readSse } from "../test/helpers/sse-client.js";
import { built, spawnServer, type SpawnedServer } from "../test/helpers/spawned-server.js";
import { tmpWorkspace } from "../test/helpers/workspace.js";
import { stepOverhead } from "./store.js";
import { median, withBaseline, type BenchResult } from "./types.js";

const SESSIONS_PER_NODE = 8;
const CHATS_PER_SESSION = 10;
const LATENCY_SAMPLES = 200;
const HELD_LEASES = 1000;

/**
 * Several `veil serve` nodes: chats per second through real server
 * processes and the fake model at zero latency (one SQLite node is the baseline), an
 * event published on node A until B's SSE client has it, a node's heartbeat with many
 * sessions held, and the loop's per-step cost on PostgreSQL (fenced writes) vs SQLite.
 */
export async function run(): Promise<BenchResult[]> {
  const missing = postgresUnavailable() ?? (built ? undefined : "dist/src/main.js is not built");
  if (missing) return [{ name: "cluster: skipped", value: 0, unit: "", note: `PostgreSQL cluster benchmarks skipped: ${missing}` }];
  const llm = await startFakeLlm();
  llm.respond(() => reply().text("ok").stop());
  const pg = await startPostgres();
  try {
    const sqliteRate = await chatsPerSecond(llm, 1, undefined);
    const oneNode = await chatsPerSecond(llm, 1, await pg.createDatabase("bench_one"));
    const twoNodes = await chatsPerSecond(llm, 2, await pg.createDatabase("bench_two"));
    const base = { name: "one node on SQLite", value: sqliteRate };
    const shape = `${SESSIONS_PER_NODE} sessions per node × ${CHATS_PER_SESSION} chats, all at once, fake model over loopback HTTP`;
    const results: BenchResult[] = [
      { name: "cluster: chats per second, one node on SQLite", value: sqliteRate, unit: "chats/s", note: shape },
      withBaseline({ name: "cluster: chats per second, one node on PostgreSQL", value: oneNode, unit: "chats/s", baseline: base, note: shape }),
      withBaseline({ name: "cluster: chats per second, two nodes on PostgreSQL", value: twoNodes, unit: "chats/s", baseline: base, note: `${shape}; 2 cores shared with the database and the model` }),
    ];
    results.push(...(await crossNodeLatency(llm, await pg.createDatabase("bench_latency"))));
    results.push(await heartbeatCost(await pg.createDatabase("bench_leases")));
    const sqliteStep = await stepOverhead({});
    const pgStep = await stepOverhead({ VEIL_DATABASE_URL: await pg.createDatabase("bench_step") });
    results.push(
      withBaseline({
        name: "cluster: loop overhead per step on PostgreSQL, writes fenced by the run's lease",
        value: pgStep,
        unit: "ms",
        baseline: { name: "the same on SQLite", value: sqliteStep },
        target: "≤ 3 ms",
        note: "median of 60 tool steps, zero-latency in-process model, serve mode (cluster node on)",
      }),
    );
    return results;
  } finally {
    await pg.stop();
    await llm.close();
  }
}

/** `nodes` server processes on one workspace (and `url`, or SQLite when undefined); every session chats on its own node. */
async function chatsPerSecond(llm: FakeLlm, count: number, url: string | undefined): Promise<number> {
  const ws = tmpWorkspace({ files: { ".veil/settings.json": JSON.stringify({ limits: { maxLiveSessions: 10_000 } }) } });
  const nodes: SpawnedServer[] = [];
  try {
    for (let i = 0; i < count; i++) nodes.push(await spawnServer(ws.root, { baseUrl: llm.baseUrl, env: url ? { VEIL_DATABASE_URL: url } : {} }));
    const post = async (node: SpawnedServer, path: string, body: unknown = {}) => {
      const res = await node.fetch(path, { method: "POST", body: JSON.stringify(body) });
      if (res.status >= 300) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
      return res.json() as Promise<{ id: string }>;
    };
    const sessions = await Promise.all(nodes.flatMap((node) => Array.from({ length: SESSIONS_PER_NODE }, async () => ({ node, id: (await post(node, "/sessions")).id }))));
    // One warm-up chat per session (first-run setup, lease taken by its node).
    await Promise.all(sessions.map(({ node, id }) => post(node, `/sessions/${id}/chat`, { message: "warm up" })));
    const start = performance.now();
    await Promise.all(
      sessions.map(async ({ node, id }) => {
        for (let i = 0; i < CHATS_PER_SESSION; i++) await post(node, `/sessions/${id}/chat`, { message: `chat ${i}` });
      }),
    );
    return (sessions.length * CHATS_PER_SESSION) / ((performance.now() - start) / 1000);
  } finally {
    await Promise.all(nodes.map((node) => node.kill()));
    ws.cleanup();
  }
}

/** Node A (in this process) publishes; node B (a server process) streams it to an SSE client here. */
async function crossNodeLatency(llm: FakeLlm, url: string): Promise<BenchResult[]> {
  const ws = tmpWorkspace();
  const env = { VEIL_HOME: join(ws.root, ".veil-home"), VEIL_DATABASE_URL: url, VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "x", VEIL_MODEL: "m" };
  let a: Runtime | undefined;
  let b: SpawnedServer | undefined;
  try {
    a = await createRuntime({ workspace: ws.root, env, log: memoryLogger() });
    b = await spawnServer(ws.root, { baseUrl: llm.baseUrl, env: { VEIL_DATABASE_URL: url } });
    const session = await a.sessions.create({ agent: "default" });
    const res = await b.fetch(`/events?session=${session.id}`, { headers: { accept: "text/event-stream" } });
    const sent = new Map<string, number>();
    let samples: number[] = [];
    let resolveSeen: (() => void) | undefined;
    let total = 0;
    const reading = readSse(res, {
      until: (m) => {
        const marker = (m.data?.type === "chat.chunk" ? m.data?.content : m.data?.reason) as string | undefined;
        const at = marker === undefined ? undefined : sent.get(marker);
        if (at !== undefined) {
          samples.push(performance.now() - at);
          total++;
          resolveSeen?.();
        }
        return total >= 2 * LATENCY_SAMPLES;
      },
    });
    const measure = async (publish: (marker: string) => void): Promise<(p: number) => number> => {
      samples = [];
      for (let i = 0; i < LATENCY_SAMPLES; i++) {
        const seen = new Promise<void>((resolve) => (resolveSeen = resolve));
        const marker = `bench ${sent.size}`;
        sent.set(marker, performance.now());
        publish(marker);
        await seen;
      }
      const sorted = [...samples].sort((x, y) => x - y);
      return (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
    };
    const stored = await measure((reason) => void a!.events.publish(session.id, { type: "session.state", status: "idle", reason }));
    // A live delta is never stored: it crosses by its own notification (core/cluster/delta-relay.ts).
    const delta = await measure((content) => void a!.events.publish(session.id, { type: "chat.chunk", content }));
    await reading;
    const note = `${LATENCY_SAMPLES} events one after another, stored on A, LISTEN/NOTIFY, read and streamed by B`;
    const deltaNote = `${LATENCY_SAMPLES} chat.chunk deltas one after another, delivered on A, one NOTIFY each, streamed by B`;
    return [
      withBaseline({ name: "cluster: event published on A → seen on B's SSE, p50", value: stored(0.5), unit: "ms", baseline: { name: "p50 of the same", value: stored(0.5) }, note }),
      withBaseline({ name: "cluster: event published on A → seen on B's SSE, p99", value: stored(0.99), unit: "ms", baseline: { name: "p50 of the same", value: stored(0.5) }, target: "≤ 50 ms", note }),
      withBaseline({ name: "cluster: live delta on A → seen on B's SSE, p50", value: delta(0.5), unit: "ms", baseline: { name: "stored event p50", value: stored(0.5) }, note: deltaNote }),
      withBaseline({ name: "cluster: live delta on A → seen on B's SSE, p99", value: delta(0.99), unit: "ms", baseline: { name: "stored event p50", value: stored(0.5) }, target: "≤ 50 ms", note: deltaNote }),
    ];
  } finally {
    await b?.kill();
    await a?.close();
    ws.cleanup();
  }
}

/** One node holding HELD_LEASES sessions: its heartbeat renews them all in one statement. */
async function heartbeatCost(url: string): Promise<BenchResult> {
  const store = await PostgresStore.open(url);
  try {
    for (let i = 0; i < HELD_LEASES; i++) await store.acquireLease(`s${i}`, "bench-node", 60_000);
    const one = await store.acquireLease("single", "other-node", 60_000);
    const times: number[] = [];
    const single: number[] = [];
    for (let i = 0; i < 20; i++) {
      let t0 = performance.now();
      await store.renewLeases("bench-node", 60_000);
      times.push(performance.now() - t0);
      t0 = performance.now();
      await store.renewLease(one!, 60_000);
      single.push(performance.now() - t0);
    }
    return withBaseline({
      name: `cluster: heartbeat of a node holding ${HELD_LEASES} sessions (one statement)`,
      value: median(times),
      unit: "ms",
      baseline: { name: "renewing one lease", value: median(single) },
      note: "runs every leaseSeconds/3; sessions per node are bounded by settings.limits, not by the lease",
    });
  } finally {
    await store.close();
  }
}

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { memoryLogger } from "../src/base/log.js";
import { createRuntime } from "../src/runtime.js";
import type { ClusterSignal } from "../src/store/cluster.js";
import { PostgresStore } from "../src/store/postgres/postgres-store.js";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.js";
import type { Store } from "../src/store/store.js";
import { postgresUnavailable, startPostgres } from "../test/helpers/postgres.js";
import { scriptedClient } from "./loop.js";
import { median, withBaseline, type BenchResult } from "./types.js";

const OPS = 1000;
const RUNS = 3;
const BATCH = 10;
const LATENCY_SAMPLES = 300;
const STEPS = 20;
/** Both stores skip the fsync per commit here: SQLite WAL + synchronous=NORMAL, the throwaway cluster fsync=off. */
const CLUSTER_NOTE = "sequential awaits; local cluster with fsync off, as SQLite NORMAL skips fsync per commit";

type Op = (store: Store, run: number, i: number) => Promise<unknown>;

const OPS_UNDER_TEST: { name: string; op: Op }[] = [
  {
    name: "appendMessage",
    op: (store, run, i) => store.appendMessage({ id: `m-${run}-${i}`, session_id: "bench", role: "user", content: `message ${i} `.repeat(20) }),
  },
  {
    name: "appendEvents (1 event)",
    op: (store, run, i) => store.appendEvents([{ session_id: `ev-${run}`, seq: i + 1, type: "chat.message", ts: i, data: JSON.stringify({ type: "chat.message", i }) }]),
  },
  {
    name: `appendEvents (batch of ${BATCH})`,
    op: (store, run, i) =>
      store.appendEvents(
        Array.from({ length: BATCH }, (_, k) => ({ session_id: `evb-${run}`, seq: i * BATCH + k + 1, type: "tool.end", ts: i, data: JSON.stringify({ i, k }) })),
      ),
  },
];

/** Median per-op time (µs) of `OPS` sequential calls, over `RUNS` runs after one warm-up run. */
async function perOp(store: Store, op: Op, runOffset: number): Promise<number> {
  for (let i = 0; i < OPS / 10; i++) await op(store, runOffset + 1000, i);
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const start = performance.now();
    for (let i = 0; i < OPS; i++) await op(store, runOffset + run, i);
    times.push(((performance.now() - start) * 1000) / OPS);
  }
  return median(times);
}

/** Store write cost, SQLite (baseline) vs PostgreSQL on a local throwaway cluster, plus cross-node signal latency. */
export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), "veil-bench-store-"));
  const sqlite = SqliteStore.open(join(dir, "bench.db"));
  await sqlite.createSession({ id: "bench", agent: "default", mode: "chat" });
  const sqliteTimes = new Map<string, number>();
  for (const { name, op } of OPS_UNDER_TEST) sqliteTimes.set(name, await perOp(sqlite, op, 0));
  await sqlite.close();
  rmSync(dir, { recursive: true, force: true });

  const sqliteStep = await stepOverhead({});
  const missing = postgresUnavailable();
  if (missing) {
    return OPS_UNDER_TEST.map(({ name }) => ({ name: `store: ${name}, SQLite`, value: sqliteTimes.get(name)!, unit: "µs/op", note: `PostgreSQL skipped: ${missing}` }));
  }
  const cluster = await startPostgres();
  try {
    const url = await cluster.createDatabase("veil_bench");
    const [nodeA, nodeB] = await Promise.all([PostgresStore.open(url), PostgresStore.open(url)]);
    await nodeA.createSession({ id: "bench", agent: "default", mode: "chat" });
    const results: BenchResult[] = [];
    for (const { name, op } of OPS_UNDER_TEST) {
      const value = await perOp(nodeA, op, 0);
      results.push(withBaseline({ name: `store: ${name}, PostgreSQL (loopback)`, value, unit: "µs/op", baseline: { name: "SQLite", value: sqliteTimes.get(name)! }, note: CLUSTER_NOTE }));
    }
    const lease = (await nodeA.acquireLease("bench", "node-a", 60_000))!;
    const fenced = nodeA.fenced(lease);
    const fencedValue = await perOp(fenced, OPS_UNDER_TEST[0]!.op, RUNS);
    results.push(withBaseline({ name: "store: appendMessage through a lease fence, PostgreSQL", value: fencedValue, unit: "µs/op", baseline: { name: "unfenced PostgreSQL", value: results[0]!.value } }));
    results.push(...(await signalLatency(nodeA, nodeB)));
    const pgStep = await stepOverhead({ VEIL_DATABASE_URL: url });
    results.push(
      withBaseline({
        name: "loop overhead per step on PostgreSQL (response end → next request, incl. log_write)",
        value: pgStep,
        unit: "ms",
        baseline: { name: "the same on SQLite", value: sqliteStep },
        target: "≤ 3 ms",
        note: `median of ${3 * STEPS} steps, zero-latency in-process model`,
      }),
    );
    await Promise.all([nodeA.close(), nodeB.close()]);
    return results;
  } finally {
    await cluster.stop();
  }
}

/** Median gap between a model response's end and the next request, over 3 runs of STEPS tool steps. */
export async function stepOverhead(env: Record<string, string>): Promise<number> {
  const workspace = mkdtempSync(join(tmpdir(), "veil-bench-step-"));
  try {
    const gaps: number[] = [];
    for (let round = 0; round < 3; round++) {
      const scripted = scriptedClient(STEPS);
      const runtime = await createRuntime({ workspace, env: { VEIL_HOME: join(workspace, "home"), VEIL_MODEL: "bench", ...env }, llm: scripted.client, log: memoryLogger() });
      const session = await runtime.sessions.create({ agent: "default" });
      await (await runtime.sessions.send(session.id, "go")).result;
      for (let i = 1; i < scripted.requestStarts.length; i++) gaps.push(scripted.requestStarts[i]! - scripted.responseEnds[i - 1]!);
      await runtime.close();
    }
    return median(gaps);
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

/** Node A appends one event; node B's listener sees the signal and reads the event: p50/p99. */
async function signalLatency(writer: PostgresStore, reader: PostgresStore): Promise<BenchResult[]> {
  let waiting: ((gseq: number) => void) | undefined;
  const subscription = await reader.subscribe((signal: ClusterSignal) => {
    if (signal.kind === "events") waiting?.(signal.gseq);
  });
  const samples: number[] = [];
  let after = await reader.lastEventGseq();
  for (let i = 0; i < LATENCY_SAMPLES; i++) {
    const seen = new Promise<number>((resolve) => (waiting = resolve));
    const start = performance.now();
    await writer.appendEvents([{ session_id: "latency", seq: i + 1, type: "chat.message", ts: i, data: "{}" }]);
    await seen;
    const page = await reader.listEventsGlobal({ after });
    after = page.at(-1)?.gseq ?? after;
    samples.push(performance.now() - start);
  }
  await subscription.close();
  samples.sort((x, y) => x - y);
  const pct = (p: number) => samples[Math.min(samples.length - 1, Math.floor(p * samples.length))]!;
  return [
    { name: "cluster: event appended on A → read on B (LISTEN/NOTIFY), p50", value: pct(0.5), unit: "ms", target: "p99 ≤ 50 ms" },
    { name: "cluster: event appended on A → read on B (LISTEN/NOTIFY), p99", value: pct(0.99), unit: "ms", target: "≤ 50 ms" },
  ];
}

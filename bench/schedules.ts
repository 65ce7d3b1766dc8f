import { performance } from "node:perf_hooks";
import { join } from "node:path";
import { createRequire } from "node:module";
import { reply, startFakeLlm, type FakeLlm } from "../test/helpers/fake-llm.js";
import { postgresUnavailable, startPostgres, withClient } from "../test/helpers/postgres.js";
import { built, spawnServer, type SpawnedServer } from "../test/helpers/spawned-server.js";
import { tmpWorkspace, type TempWorkspace } from "../test/helpers/workspace.js";
import { median, withBaseline, type BenchResult } from "./types.js";

const SCHEDULES = 1000;
/** Requests in flight while the schedules are created. */
const CREATE_CONCURRENCY = 20;
/** The shared due minute is at least this far off once creation starts: creation plus a node's resync (5 s). */
const LEAD_MS = 30_000;
const SETTLE_TIMEOUT_MS = 300_000;

/**
 * One run: its schedule, its due time, when it fired (a node took it and marked its run) and
 * when its run began (the prompt delivered into the history), epoch ms.
 */
interface Fired {
  schedule: string;
  at: number;
  fired: number;
  started: number;
}

/**
 * Schedules: 1,000 schedules whose cron expression names the same minute, on one
 * `veil serve` (SQLite), then on two nodes on one PostgreSQL. A due time "fires" when a node
 * takes it and marks its run (it then runs there, within schedules.maxConcurrentRuns at a
 * time); the run "starts" when its prompt is delivered into the session's history (the model
 * call follows). The baseline is one schedule's run starting
 * alone, measured in the same run; the aim is every fire within 10 s of its time and, with
 * two nodes, no due time fired twice.
 *
 * The nodes are set up to run a thousand at once (limits.maxLiveSessions and
 * schedules.maxConcurrentRuns): below that, a due time past the limit starts only when an
 * earlier run ends, so the last starts are paced by whole turns, not by the schedules (with
 * the default 64, the last of 1,000 began 8.5 s after its time against 3.0 s, on one node at
 * load 7).
 */
export async function run(): Promise<BenchResult[]> {
  if (!built) return [{ name: "schedules: skipped", value: 0, unit: "", note: "dist/src/main.js is not built" }];
  const llm = await startFakeLlm();
  llm.respond(() => reply().text("ok").stop());
  try {
    // A lone schedule is taken within a millisecond of its time, which makes no ratio: the
    // baseline is when its run began (the prompt in the history), which every run must reach.
    const alone = await loneSchedule(llm);
    const baseline = { name: "one schedule alone: its run started after its time, median", value: alone };
    const results: BenchResult[] = [];
    const one = await sameMinute(llm, 1, undefined);
    results.push(...latencyFigures("one node on SQLite", one, baseline));
    const missing = postgresUnavailable();
    if (missing) {
      results.push({ name: "schedules: two nodes skipped", value: 0, unit: "", note: missing });
      return results;
    }
    const pg = await startPostgres();
    try {
      const url = await pg.createDatabase("bench_schedules");
      const two = await sameMinute(llm, 2, url);
      results.push(...latencyFigures("two nodes on PostgreSQL", two, baseline));
      const twice = two.fired.length - new Set(two.fired.map((f) => `${f.schedule}@${f.at}`)).size;
      results.push({ name: "schedules: due times fired twice, two nodes", value: twice, unit: "runs", target: "0", note: `${two.fired.length} runs of ${SCHEDULES} schedules; ${two.sessions} sessions; ${two.modelCalls} model calls` });
    } finally {
      await pg.stop();
    }
    return results;
  } finally {
    await llm.close();
  }
}

function latencyFigures(where: string, outcome: { fired: Fired[]; sessions: number; modelCalls: number }, baseline: { name: string; value: number }): BenchResult[] {
  const sorted = (values: number[]) => values.sort((a, b) => a - b);
  const fired = sorted(outcome.fired.map((f) => f.fired - f.at));
  const started = sorted(outcome.fired.map((f) => f.started - f.at));
  const pct = (values: number[], p: number) => values[Math.min(values.length - 1, Math.floor(p * values.length))] ?? NaN;
  const note = `${outcome.fired.length} of ${SCHEDULES} schedules ran (one cron minute, fake model over loopback HTTP, schedules.maxConcurrentRuns ${SCHEDULES} per node); ${outcome.sessions} sessions, ${outcome.modelCalls} model calls`;
  const name = `schedules: ${SCHEDULES} due in one minute, ${where}`;
  return [
    withBaseline({ name: `${name}: fired after its time, p50`, value: pct(fired, 0.5), unit: "ms", baseline, note }),
    withBaseline({ name: `${name}: the last fired after its time`, value: fired.at(-1) ?? NaN, unit: "ms", baseline, target: "≤ 10000 ms", note }),
    withBaseline({ name: `${name}: run started after its time, p50`, value: pct(started, 0.5), unit: "ms", baseline, note: "the prompt delivered into the session's history; the runs share the node's CPU" }),
    withBaseline({ name: `${name}: the last run started after its time`, value: started.at(-1) ?? NaN, unit: "ms", baseline, note: "the prompt delivered into the session's history; the runs share the node's CPU" }),
  ];
}

/** Median delay from due time to run start (prompt delivered) of three runs of one `everySeconds: 2` schedule, alone on a node. */
async function loneSchedule(llm: FakeLlm): Promise<number> {
  const ws = tmpWorkspace();
  const node = await spawnServer(ws.root, { baseUrl: llm.baseUrl });
  try {
    const schedule = await post(node, "/schedules", { agent: "default", prompt: "alone", everySeconds: 2 });
    for (;;) {
      const { runs } = (await (await node.fetch(`/schedules/${schedule.id}/runs`)).json()) as { runs: unknown[] };
      if (runs.length >= 3) break;
      await sleep(200);
    }
    await node.fetch(`/schedules/${schedule.id}`, { method: "PATCH", body: JSON.stringify({ enabled: false }) });
    return median(sqliteFired(ws).map((f) => f.started - f.at));
  } finally {
    await node.kill();
    ws.cleanup();
  }
}

/** SCHEDULES schedules due in the same minute on `count` nodes (SQLite when `url` is undefined). */
async function sameMinute(llm: FakeLlm, count: number, url: string | undefined): Promise<{ fired: Fired[]; sessions: number; modelCalls: number }> {
  const settings = { limits: { maxLiveSessions: 10 * SCHEDULES }, schedules: { maxConcurrentRuns: SCHEDULES } };
  const ws = tmpWorkspace({ files: { ".veil/settings.json": JSON.stringify(settings) } });
  const nodes: SpawnedServer[] = [];
  const callsBefore = llm.completionRequests.length;
  try {
    for (let i = 0; i < count; i++) nodes.push(await spawnServer(ws.root, { baseUrl: llm.baseUrl, env: url ? { VEIL_DATABASE_URL: url } : {} }));
    const due = nextMinute(Date.now() + LEAD_MS);
    const when = new Date(due);
    const cron = `${when.getUTCMinutes()} ${when.getUTCHours()} ${when.getUTCDate()} ${when.getUTCMonth() + 1} *`;
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CREATE_CONCURRENCY }, async () => {
        for (let i = next++; i < SCHEDULES; i = next++) await post(nodes[i % nodes.length]!, "/schedules", { agent: "default", prompt: `job ${i}`, cron });
      }),
    );
    if (Date.now() > due - 6000) throw new Error(`creating ${SCHEDULES} schedules took ${Math.round(performance.now() - started)} ms: past the lead before the due minute`);
    await sleep(Math.max(0, due - Date.now()));
    const read = url ? () => pgFired(url) : async () => sqliteFired(ws);
    const deadline = Date.now() + SETTLE_TIMEOUT_MS;
    let fired = await read();
    while (fired.length < SCHEDULES && Date.now() < deadline) {
      await sleep(500);
      fired = await read();
    }
    // Anything more (a double fire) shows by now.
    await sleep(3000);
    fired = await read();
    const sessions = url ? await withClient(url, async (c) => Number((await c.query("SELECT count(*) AS n FROM sessions")).rows[0].n)) : sqliteCount(ws, "sessions");
    return { fired, sessions, modelCalls: llm.completionRequests.length - callsBefore };
  } finally {
    await Promise.all(nodes.map((node) => node.kill()));
    ws.cleanup();
  }
}

/** The runs that began, read from the workspace's SQLite file beside the running server. */
function sqliteFired(ws: TempWorkspace): Fired[] {
  const db = openSqlite(ws);
  try {
    const rows = db.prepare(FIRED_SQL).all() as { schedule: string; at: number; fired: string; started: string }[];
    return rows.map(firedOf);
  } finally {
    db.close();
  }
}

function sqliteCount(ws: TempWorkspace, table: string): number {
  const db = openSqlite(ws);
  try {
    return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

async function pgFired(url: string): Promise<Fired[]> {
  const rows = await withClient(url, async (c) => (await c.query<{ schedule: string; at: string; fired: string; started: string }>(FIRED_SQL)).rows);
  return rows.map(firedOf);
}

const firedOf = (r: { schedule: string; at: number | string; fired: string; started: string }): Fired => ({ schedule: r.schedule, at: Number(r.at), fired: Date.parse(r.fired), started: Date.parse(r.started) });

/** Each run that ended, when its node took it, and when its prompt was delivered into the history. */
const FIRED_SQL = `SELECT r.schedule_id AS schedule, r.at AS at, r.started_at AS fired, m.created_at AS started
  FROM schedule_runs r JOIN messages m ON m.session_id = r.session_id AND m.seq = 1
  WHERE r.status = 'ok'`;

function openSqlite(ws: TempWorkspace) {
  const Database = createRequire(import.meta.url)("better-sqlite3") as typeof import("better-sqlite3");
  return new Database(join(ws.root, ".veil", "veil.db"), { readonly: true });
}

async function post(node: SpawnedServer, path: string, body: unknown): Promise<{ id: string }> {
  const res = await node.fetch(path, { method: "POST", body: JSON.stringify(body) });
  if (res.status >= 300) throw new Error(`POST ${path}: HTTP ${res.status}: ${await res.text()}`);
  return res.json() as Promise<{ id: string }>;
}

function nextMinute(after: number): number {
  return Math.ceil(after / 60_000) * 60_000;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

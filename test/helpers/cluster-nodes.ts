/**
 * Several `veil serve` processes on one PostgreSQL database and one shared workspace, for
 * the test/cluster files: each file owns its throwaway PostgreSQL cluster and its nodes.
 */
import { reply, startFakeLlm, type FakeLlm } from "./fake-llm.js";
import { afterAll, afterEach, beforeAll } from "vitest";
import { postgresUnavailable, startPostgres, withClient, type PostgresCluster } from "./postgres.js";
import { readSse } from "./sse-client.js";
import { built, spawnServer, type SpawnedServer } from "./spawned-server.js";
import { tmpWorkspace, type TempWorkspace } from "./workspace.js";

export { reply };

/** Why the cluster tests cannot run here, or undefined. */
export const clusterUnavailable = postgresUnavailable() ?? (built ? undefined : "dist/src/main.js is not built (npm run build)");

export interface ClusterNodes {
  url: string;
  llm: FakeLlm;
  ws: TempWorkspace;
  nodes: SpawnedServer[];
  spawn(env?: Record<string, string>): Promise<SpawnedServer>;
  /** Kills every node (SIGCONT first, for a stopped one), closes the fake model, removes the workspace. */
  stop(): Promise<void>;
}

/** `count` nodes on a fresh database of `pg`; leases last 2 s so takeovers are quick. `files` go into the shared workspace, `env` into every node's environment. */
export async function startNodes(pg: PostgresCluster, count: number, settings: Record<string, unknown> = {}, files: Record<string, string> = {}, env: Record<string, string> = {}): Promise<ClusterNodes> {
  const url = await pg.createDatabase("cluster");
  const ws = tmpWorkspace({ files: { ".veil/settings.json": JSON.stringify({ cluster: { leaseSeconds: 2 }, ...settings }), ...files } });
  const llm = await startFakeLlm();
  const nodes: SpawnedServer[] = [];
  const cluster: ClusterNodes = {
    url,
    llm,
    ws,
    nodes,
    async spawn(more = {}) {
      const node = await spawnServer(ws.root, { baseUrl: llm.baseUrl, env: { VEIL_DATABASE_URL: url, ...env, ...more } });
      nodes.push(node);
      return node;
    },
    async stop() {
      for (const node of nodes) if (node.child.exitCode === null) node.child.kill("SIGCONT");
      await Promise.all(nodes.map((node) => node.kill()));
      await llm.close();
      ws.cleanup();
    },
  };
  for (let i = 0; i < count; i++) await cluster.spawn();
  return cluster;
}

export async function json(res: Promise<Response>): Promise<any> {
  const r = await res;
  const body = await r.json();
  if (r.status >= 300) throw new Error(`HTTP ${r.status}: ${JSON.stringify(body)}`);
  return body;
}

export const post = (node: SpawnedServer, path: string, body: unknown = {}) => json(node.fetch(path, { method: "POST", body: JSON.stringify(body) }));
export const chat = (node: SpawnedServer, id: string, message: string) => post(node, `/sessions/${id}/chat`, { message });
export const messages = (node: SpawnedServer, id: string) => json(node.fetch(`/sessions/${id}/messages`));

/** The global SSE stream of `node`, read until `until` matches; resolves once the stream is open. */
export async function watch(node: SpawnedServer, until: (data: any) => boolean): Promise<{ done: Promise<{ data: any }[]> }> {
  const res = await node.fetch("/events", { headers: { accept: "text/event-stream" } });
  return { done: readSse(res, { until: (m) => !!m.data && until(m.data) }) };
}

/** Resolves when `node`'s log has a line matching `pattern` (polling its captured stderr). */
export async function logLine(node: SpawnedServer, pattern: RegExp, timeoutMs = 20_000): Promise<string> {
  const started = Date.now();
  for (;;) {
    const line = node.stderr().split("\n").find((l) => pattern.test(l));
    if (line) return line;
    if (Date.now() - started > timeoutMs) throw new Error(`no log line matching ${pattern} within ${timeoutMs} ms:\n${node.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Polls `probe` until it returns a truthy value. */
export async function eventually<T>(probe: () => Promise<T | undefined | false>, what: string, timeoutMs = 20_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Everything the database holds of one session, straight from the tables (no node in between). */
export async function sessionRows(url: string, sessionId: string): Promise<Record<string, unknown[]>> {
  return withClient(url, async (client) => {
    const out: Record<string, unknown[]> = {};
    for (const [table, order] of [["sessions", "id"], ["messages", "seq"], ["tool_calls", "pos"], ["events", "gseq"], ["session_meta", "key"], ["inbox", "pos"]] as const) {
      const key = table === "sessions" ? "id" : "session_id";
      out[table] = (await client.query(`SELECT * FROM ${table} WHERE ${key} = $1 ORDER BY ${order}`, [sessionId])).rows;
    }
    return out;
  });
}

/**
 * The hooks of one test/cluster file: its own PostgreSQL for the whole file, the nodes of
 * each test stopped after it (their logs printed when it failed). `afterTest` runs first
 * (e.g. restarting a database a test stopped).
 */
export function clusterFile(name: string, afterTest?: (pg: PostgresCluster) => Promise<void>) {
  if (clusterUnavailable) console.warn(`[cluster/${name}] skipping: ${clusterUnavailable}`);
  let pg: PostgresCluster | undefined;
  let current: ClusterNodes | undefined;
  beforeAll(async () => {
    if (!clusterUnavailable) pg = await startPostgres();
  }, 120_000);
  afterAll(async () => {
    await pg?.stop();
  });
  afterEach(async (context) => {
    if (context.task.result?.state === "fail") for (const [i, node] of (current?.nodes ?? []).entries()) console.error(`node ${i} stderr:\n${node.stderr()}`);
    if (pg) await afterTest?.(pg);
    await current?.stop();
    current = undefined;
  });
  return {
    get pg(): PostgresCluster {
      if (!pg) throw new Error("PostgreSQL is not running");
      return pg;
    },
    /** `count` nodes for this test (see startNodes), stopped after it. */
    async start(count: number, settings?: Record<string, unknown>, files?: Record<string, string>, env?: Record<string, string>): Promise<ClusterNodes> {
      current = await startNodes(this.pg, count, settings, files, env);
      return current;
    },
  };
}

/**
 * Several `veil serve` processes on one throwaway PostgreSQL, for the cluster test files:
 * one PostgreSQL cluster per file (beforeAll), a fresh database, workspace and fake LLM per test.
 */
import { afterAll, afterEach, beforeAll } from "vitest";
import { startFakeLlm, type FakeLlm } from "./fake-llm.js";
import { postgresUnavailable, startPostgres, type PostgresCluster } from "./postgres.js";
import { readSse, type SseMessage } from "./sse-client.js";
import { built, spawnServer, type SpawnedServer } from "./spawned-server.js";
import { tmpWorkspace, type TempWorkspace } from "./workspace.js";

export interface ClusterHarness {
  /** Why these tests skip, or undefined when PostgreSQL and the build are there. */
  unavailable: string | undefined;
  llm(): FakeLlm;
  /** `count` nodes on a fresh database and workspace (leases of 2 s unless settings say otherwise). */
  start(count: number, options?: { settings?: Record<string, unknown>; files?: Record<string, string> }): Promise<SpawnedServer[]>;
}

export function clusterHarness(file: string): ClusterHarness {
  const unavailable = postgresUnavailable() ?? (built ? undefined : "dist/src/main.js is not built (npm run build)");
  if (unavailable) console.warn(`[${file}] skipping: ${unavailable}`);
  let pg: PostgresCluster | undefined;
  let llm: FakeLlm | undefined;
  let ws: TempWorkspace | undefined;
  let nodes: SpawnedServer[] = [];

  beforeAll(async () => {
    if (!unavailable) pg = await startPostgres();
  }, 120_000);
  afterAll(async () => {
    await pg?.stop();
  });
  afterEach(async (context) => {
    if (context.task.result?.state === "fail") for (const [i, node] of nodes.entries()) console.error(`node ${i} stderr:\n${node.stderr()}`);
    await Promise.all(nodes.map((node) => node.kill()));
    await llm?.close();
    ws?.cleanup();
    nodes = [];
    llm = ws = undefined;
  });

  return {
    unavailable,
    llm: () => llm!,
    async start(count, options = {}) {
      const url = await pg!.createDatabase("cluster");
      const settings = { cluster: { leaseSeconds: 2 }, ...options.settings };
      ws = tmpWorkspace({ files: { ".veil/settings.json": JSON.stringify(settings), ...options.files } });
      llm = await startFakeLlm();
      // One after the other: the first runs the migrations, the next finds them done.
      for (let i = 0; i < count; i++) nodes.push(await spawnServer(ws.root, { baseUrl: llm.baseUrl, env: { VEIL_DATABASE_URL: url } }));
      return nodes;
    },
  };
}

/** status and parsed body of a response. */
export async function answer(res: Promise<Response>): Promise<{ status: number; body: any }> {
  const r = await res;
  return { status: r.status, body: await r.json() };
}

/** The parsed body of a 2xx response; throws with the body otherwise. */
export async function json(res: Promise<Response>): Promise<any> {
  const { status, body } = await answer(res);
  if (status >= 300) throw new Error(`HTTP ${status}: ${JSON.stringify(body)}`);
  return body;
}

export const post = (node: SpawnedServer, path: string, body: unknown = {}) => json(node.fetch(path, { method: "POST", body: JSON.stringify(body) }));
export const chat = (node: SpawnedServer, id: string, message: string) => post(node, `/sessions/${id}/chat`, { message });
export const messages = (node: SpawnedServer, id: string) => json(node.fetch(`/sessions/${id}/messages`));

/**
 * The global SSE stream of `node`, read until `until` matches; resolves `ready` once the
 * server answered (its bus subscription exists from then on).
 */
export async function watch(node: SpawnedServer, until: (data: any) => boolean): Promise<{ done: Promise<SseMessage[]> }> {
  const res = await node.fetch("/events", { headers: { accept: "text/event-stream" } });
  return { done: readSse(res, { until: (m) => !!m.data && until(m.data) }) };
}

/** Polls `probe` until it returns a value other than undefined (cluster state settles through the database). */
export async function eventually<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

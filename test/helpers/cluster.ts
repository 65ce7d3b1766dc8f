/**
 * The lifecycle of the cluster test files built on cluster-nodes.ts: one PostgreSQL cluster per
 * file (beforeAll), fresh nodes, database, workspace and fake LLM per test, each node's log
 * printed when a test fails.
 */
import { afterAll, afterEach, beforeAll } from "vitest";
import type { FakeLlm } from "./fake-llm.js";
import { clusterUnavailable, startNodes, type ClusterNodes } from "./cluster-nodes.js";
import { startPostgres, type PostgresCluster } from "./postgres.js";
import type { SpawnedServer } from "./spawned-server.js";

export { chat, eventually, json, messages, post, sessionRows, watch } from "./cluster-nodes.js";

export interface ClusterHarness {
  /** Why these tests skip, or undefined when PostgreSQL and the build are there. */
  unavailable: string | undefined;
  llm(): FakeLlm;
  /** The running nodes' database URL and shared workspace folder. */
  where(): { url: string; workspace: string };
  /** `count` nodes (leases of 2 s unless `settings` say otherwise); `files` go into the shared workspace. */
  start(count: number, options?: { settings?: Record<string, unknown>; files?: Record<string, string> }): Promise<SpawnedServer[]>;
}

export function clusterHarness(file: string): ClusterHarness {
  const unavailable = clusterUnavailable;
  if (unavailable) console.warn(`[${file}] skipping: ${unavailable}`);
  let pg: PostgresCluster | undefined;
  let current: ClusterNodes | undefined;

  beforeAll(async () => {
    if (!unavailable) pg = await startPostgres();
  }, 120_000);
  afterAll(async () => {
    await pg?.stop();
  });
  afterEach(async (context) => {
    if (context.task.result?.state === "fail") for (const [i, node] of (current?.nodes ?? []).entries()) console.error(`node ${i} stderr:\n${node.stderr()}`);
    await current?.stop();
    current = undefined;
  });

  return {
    unavailable,
    llm: () => current!.llm,
    where: () => ({ url: current!.url, workspace: current!.ws.root }),
    async start(count, options = {}) {
      current = await startNodes(pg!, count, options.settings, options.files);
      return current.nodes;
    },
  };
}

/** status and parsed body of a response. */
export async function answer(res: Promise<Response>): Promise<{ status: number; body: any }> {
  const r = await res;
  return { status: r.status, body: await r.json() };
}

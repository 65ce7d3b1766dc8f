/**
 * The cluster test files' view of clusterFile (cluster-nodes.ts): one PostgreSQL cluster per
 * file, fresh nodes, database, workspace and fake LLM per test, each node's log printed when
 * a test fails; the running nodes, their fake LLM and where they keep their data.
 */
import type { FakeLlm } from "./fake-llm.js";
import { clusterFile, clusterUnavailable, type ClusterNodes } from "./cluster-nodes.js";
import type { SpawnedServer } from "./spawned-server.js";

export { chat, eventually, json, messages, post, sessionRows, watch } from "./cluster-nodes.js";

export interface ClusterHarness {
  /** Why these tests skip, or undefined when PostgreSQL and the build are there. */
  unavailable: string | undefined;
  llm(): FakeLlm;
  /** The running nodes' database URL and shared workspace folder. */
  where(): { url: string; workspace: string };
  /** `count` nodes (leases of 2 s unless `settings` say otherwise); `files` go into the shared workspace, `env` into each node's environment. */
  start(count: number, options?: { settings?: Record<string, unknown>; files?: Record<string, string>; env?: Record<string, string> }): Promise<SpawnedServer[]>;
  /** One more node of the running cluster, `env` added to its environment (e.g. a home of its own). */
  spawn(env?: Record<string, string>): Promise<SpawnedServer>;
}

export function clusterHarness(file: string): ClusterHarness {
  const hooks = clusterFile(file.replace(/^cluster\//, ""));
  let current: ClusterNodes | undefined;
  return {
    unavailable: clusterUnavailable,
    llm: () => current!.llm,
    where: () => ({ url: current!.url, workspace: current!.ws.root }),
    async start(count, options = {}) {
      current = await hooks.start(count, options.settings, options.files, options.env);
      return current.nodes;
    },
    spawn: (env = {}) => current!.spawn(env),
  };
}

/** status and parsed body of a response. */
export async function answer(res: Promise<Response>): Promise<{ status: number; body: any }> {
  const r = await res;
  return { status: r.status, body: await r.json() };
}

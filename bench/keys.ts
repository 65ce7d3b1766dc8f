import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { memoryLogger } from "../src/base/log.js";
import { createRuntime, type Runtime } from "../src/runtime.js";
import { createApp } from "../src/server/app.js";
import { allowedHosts } from "../src/server/auth.js";
import { median, withBaseline, type BenchResult } from "./types.js";

const SECRET = "bench-secret";
const HOST = "127.0.0.1:7700";
const REQUESTS = 2000;
const RUNS = 5;

interface Served {
  runtime: Runtime;
  request(path: string, credential: string): Promise<Response>;
  close(): Promise<void>;
}

async function served(): Promise<Served> {
  const workspace = mkdtempSync(join(tmpdir(), "veil-bench-keys-"));
  const runtime = await createRuntime({ workspace, start: false, log: memoryLogger(), env: { VEIL_MODEL: "m", VEIL_API_KEY: "sk", VEIL_BASE_URL: "http://127.0.0.1:9", VEIL_HOME: join(workspace, "home") } });
  const app = createApp({ runtime, secret: SECRET, allowedHosts: allowedHosts("127.0.0.1", 7700) });
  return {
    runtime,
    request: (path, credential) => Promise.resolve(app.request(`http://${HOST}${path}`, { headers: { host: HOST, authorization: `Bearer ${credential}` } })),
    async close() {
      await runtime.close();
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}

/**
 * Median µs per request of `REQUESTS` sequential requests for each credential, over `RUNS`
 * runs after a warm-up; the credentials take turns run by run, so load on the machine
 * falls on each alike.
 */
async function perRequest(server: Served, path: string, credentials: string[]): Promise<number[]> {
  const once = async (credential: string) => {
    const res = await server.request(path, credential);
    if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  };
  for (const credential of credentials) for (let i = 0; i < REQUESTS / 4; i++) await once(credential);
  const runs = credentials.map(() => [] as number[]);
  for (let run = 0; run < RUNS; run++) {
    for (const [c, credential] of credentials.entries()) {
      const start = performance.now();
      for (let i = 0; i < REQUESTS; i++) await once(credential);
      runs[c]!.push(((performance.now() - start) * 1000) / REQUESTS);
    }
  }
  return runs.map(median);
}

/** Sessions owned by `owner` (or by the secret when null), written straight to the store. */
async function seed(runtime: Runtime, owner: string | null, count: number, prefix: string): Promise<void> {
  for (let i = 0; i < count; i++) await runtime.store.createSession({ id: `${prefix}-${i}`, agent: "default", mode: "chat", owner_key: owner });
}

/**
 * What keys cost a request. (1) The access check (key lookup: a hash and a cached row; scope;
 * ownership of the session in the path) against the plain secret, on `GET /sessions/:id`.
 * (2) `GET /sessions` for one key with 10 sessions when the store holds 1,000 keys and
 * 10,000 sessions, against the same key alone in its store.
 */
export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  const one = await served();
  try {
    const { row, key } = await one.runtime.keys.create({ name: "bench", scopes: ["chat"] });
    await seed(one.runtime, row.id, 10, "own");
    const path = "/sessions/own-0";
    const [secret, withKey] = (await perRequest(one, path, [SECRET, key])) as [number, number];
    results.push(withBaseline({ name: "GET /sessions/:id with an API key (auth + scope + ownership)", value: withKey, unit: "µs/request", baseline: { name: "the server secret", value: secret } }));
    results.push({ name: "access check of a key over the secret", value: withKey - secret, unit: "µs/request", target: "≤ 50 µs" });
    const [alone] = (await perRequest(one, "/sessions", [key])) as [number];

    const crowd = await served();
    try {
      const mine = await crowd.runtime.keys.create({ name: "bench", scopes: ["chat"] });
      await seed(crowd.runtime, mine.row.id, 10, "own");
      const others: string[] = [];
      for (let k = 0; k < 999; k++) others.push((await crowd.runtime.keys.create({ name: `k${k}`, scopes: ["chat"] })).row.id);
      // 9,990 more sessions spread over the other keys (and a few of the secret's).
      for (let i = 0; i < 9990; i++) await crowd.runtime.store.createSession({ id: `s-${i}`, agent: "default", mode: "chat", owner_key: i % 50 === 0 ? null : others[i % others.length]! });
      const [crowded] = (await perRequest(crowd, "/sessions", [mine.key])) as [number];
      results.push(withBaseline({ name: "GET /sessions of a key with 10 sessions among 10,000 (1,000 keys)", value: crowded, unit: "µs/request", baseline: { name: "the same key alone", value: alone }, target: "ratio ≤ 2×" }));
    } finally {
      await crowd.close();
    }
  } finally {
    await one.close();
  }
  return results;
}

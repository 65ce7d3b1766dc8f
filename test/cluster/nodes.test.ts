import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { postgresUnavailable, startPostgres, type PostgresCluster } from "../helpers/postgres.js";
import { readSse } from "../helpers/sse-client.js";
import { built, spawnServer, type SpawnedServer } from "../helpers/spawned-server.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const unavailable = postgresUnavailable() ?? (built ? undefined : "dist/src/main.js is not built (npm run build)");
if (unavailable) console.warn(`[cluster/nodes.test] skipping: ${unavailable}`);

let pgCluster: PostgresCluster;
let llm: FakeLlm | undefined;
let ws: TempWorkspace | undefined;
let nodes: SpawnedServer[] = [];

/** One shared workspace whose leases last 2 s, so a takeover is quick. */
async function startNodes(count: number): Promise<SpawnedServer[]> {
  const url = await pgCluster.createDatabase("cluster");
  currentUrl = url;
  ws = tmpWorkspace({ files: { ".veil/settings.json": JSON.stringify({ cluster: { leaseSeconds: 2 } }) } });
  llm = await startFakeLlm();
  for (let i = 0; i < count; i++) await spawnNode(url);
  return nodes;
}

async function spawnNode(url: string): Promise<SpawnedServer> {
  const node = await spawnServer(ws!.root, { baseUrl: llm!.baseUrl, env: { VEIL_DATABASE_URL: url } });
  nodes.push(node);
  return node;
}

async function json(res: Promise<Response>): Promise<any> {
  const r = await res;
  const body = await r.json();
  if (r.status >= 300) throw new Error(`HTTP ${r.status}: ${JSON.stringify(body)}`);
  return body;
}

const post = (node: SpawnedServer, path: string, body: unknown = {}) => json(node.fetch(path, { method: "POST", body: JSON.stringify(body) }));
const chat = (node: SpawnedServer, id: string, message: string) => post(node, `/sessions/${id}/chat`, { message });
const messages = (node: SpawnedServer, id: string) => json(node.fetch(`/sessions/${id}/messages`));

/** The global SSE stream of `node`, read until `until` matches. */
function watch(node: SpawnedServer, until: (data: any) => boolean) {
  return node.fetch("/events", { headers: { accept: "text/event-stream" } }).then((res) => readSse(res, { until: (m) => !!m.data && until(m.data) }));
}

beforeAll(async () => {
  if (!unavailable) pgCluster = await startPostgres();
}, 120_000);
afterAll(async () => {
  await pgCluster?.stop();
});
afterEach(async (context) => {
  if (context.task.result?.state === "fail") for (const [i, node] of nodes.entries()) console.error(`node ${i} stderr:\n${node.stderr()}`);
  await Promise.all(nodes.map((node) => node.kill()));
  await llm?.close();
  ws?.cleanup();
  nodes = [];
  llm = ws = undefined;
});

describe.skipIf(!!unavailable)("several veil serve nodes on one PostgreSQL", () => {
  it("answers a chat sent to B for a session created on A, and A's SSE sees B's events", async () => {
    const [a, b] = await startNodes(2);
    const session = await post(a!, "/sessions");
    llm!.enqueue(reply().text("hello from the owner").stop());
    const seenOnA = watch(a!, (d) => d.type === "chat.done" && d.sessionId === session.id);
    await new Promise((resolve) => setTimeout(resolve, 100)); // the SSE subscription is set up
    const first = await chat(b!, session.id, "hi");
    expect(first.content).toBe("hello from the owner");
    const events = (await seenOnA).map((m) => m.data);
    const done = events.find((d) => d.type === "chat.done");
    expect(done.content).toBe("hello from the owner");
    expect(done.gseq).toBeGreaterThan(0);
    // The session now belongs to B; a chat on A reaches B through the inbox and returns B's answer.
    llm!.enqueue(reply().text("second answer").stop());
    const second = await chat(a!, session.id, "again");
    expect(second.content).toBe("second answer");
    const rows = await messages(a!, session.id);
    expect(rows.filter((m: any) => m.role === "user").map((m: any) => m.content)).toEqual(["hi", "again"]);
    expect(rows.filter((m: any) => m.role === "assistant").map((m: any) => m.content)).toEqual(["hello from the owner", "second answer"]);
  }, 60_000);

  it("takes a killed owner's session over within the lease: placeholder for the cut tool, next chat works", async () => {
    const [a, b] = await startNodes(2);
    const session = await post(a!, "/sessions");
    llm!.enqueue(reply().tool("bash", { command: "sleep 60" }).stop());
    const toolStarted = watch(a!, (d) => d.type === "tool.start" && d.sessionId === session.id);
    await new Promise((resolve) => setTimeout(resolve, 100));
    void b!.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "run it" }) }).catch(() => undefined);
    await toolStarted; // B owns the session and is inside the tool
    await b!.kill();
    const killedAt = Date.now();
    // A takes the session over once B's 2 s lease expires; the cut call gets its placeholder.
    for (;;) {
      const rows = await messages(a!, session.id);
      if (rows.some((m: any) => m.role === "tool")) break;
      expect(Date.now() - killedAt).toBeLessThan(10_000);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const tool = (await messages(a!, session.id)).find((m: any) => m.role === "tool");
    expect(JSON.stringify(tool)).toMatch(/cancel/i);
    llm!.enqueue(reply().text("back on A").stop());
    const next = await chat(a!, session.id, "are you there?");
    expect(next.content).toBe("back on A");
    const sent = llm!.completionRequests.at(-1)!.body as { messages: { role: string; tool_call_id?: string }[] };
    expect(sent.messages.some((m) => m.role === "tool")).toBe(true);
  }, 60_000);

  it("fires a wake-up once in the whole service although every node armed it", async () => {
    const [a] = await startNodes(1);
    const session = await post(a!, "/sessions");
    // Every answer is queued up front: on a loaded machine the wake-up may fire before B is up.
    llm!.enqueue(reply().tool("schedule_wakeup", { time: "6s", message: "wake up now" }).stop(), reply().text("armed").stop(), reply().text("woken").stop());
    expect((await chat(a!, session.id, "set a timer")).content).toBe("armed");
    // B starts after the schedule is stored, so it re-arms it too: two timers, one due time.
    const b = await spawnNode(currentUrl!);
    const startedAt = Date.now();
    for (;;) {
      const rows = await messages(b, session.id);
      if (rows.some((m: any) => m.role === "assistant" && m.content === "woken")) break;
      expect(Date.now() - startedAt).toBeLessThan(30_000);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    // Both timers were due at the same instant; give the losing node's timer a moment to have fired.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const rows = await messages(b, session.id);
    expect(rows.filter((m: any) => m.role === "user" && m.content === "wake up now")).toHaveLength(1);
    expect(llm!.completionRequests).toHaveLength(3);
  }, 60_000);
});

let currentUrl: string | undefined;

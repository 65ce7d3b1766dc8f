import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createRuntime } from "../../src/runtime.js";
import { startServer } from "../../src/server/listen.js";
import { memoryLogger } from "../../src/base/log.js";
import { reply } from "../helpers/fake-llm.js";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";
import { postgresUnavailable, startPostgres, type PostgresCluster } from "../helpers/postgres.js";
import { unavailableUnlessCI } from "../helpers/requirements.js";
import { createAgentsHarness, tag } from "../core/agents/harness.js";
import { bash, checkpoints, json, seedWorkspace, text, turn, userMessageIds } from "./helpers.js";
import { revertFlow } from "./revert-flow.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("checkpoints across sessions and restarts", () => {
  it("a sub-agent's changes belong to its own session's checkpoints", async () => {
    const agents = await createAgentsHarness();
    h = agents;
    const server = await agents.serve();
    seedWorkspace(agents.ws.root);
    agents.worker("OBJ-files").enqueue(reply().tool("bash", { command: "echo w > worker.txt" }).stop(), reply().text("worker done").stop());
    agents.boss.enqueue(
      reply().tool("agent_spawn", { agent: "worker", instance_name: "w1", objective: "OBJ-files", initial_message: { message: "write your file" } }).stop(),
      reply().tool("bash", { command: "echo b > boss.txt" }).stop(),
      reply().text("boss done").stop(),
    );
    const boss = await agents.bossSession();
    await json(await server.fetch(`/sessions/${boss}/chat`, { method: "POST", body: JSON.stringify({ message: "delegate" }) }));
    const spawn = (await agents.runtime.store.listMessages(boss)).find((r) => r.role === "tool" && r.content?.includes("<session-id>"));
    const worker = tag(spawn!.content!, "session-id")!;
    expect((await checkpoints(server, boss)).checkpoints.map((c) => c.files)).toEqual([[{ path: "boss.txt", change: "added" }]]);
    expect((await checkpoints(server, worker)).checkpoints.map((c) => c.files)).toEqual([[{ path: "worker.txt", change: "added" }]]);
    // Reverting the worker leaves the boss's file alone.
    const [first] = await userMessageIds(server, worker);
    await json(await server.fetch(`/sessions/${worker}/revert`, { method: "POST", body: JSON.stringify({ messageId: first }) }));
    expect(text(agents.ws.root, "worker.txt")).toBeNull();
    expect(text(agents.ws.root, "boss.txt")).toBe("b\n");
  });

  it("a revert after a restart works from the store alone, and what changed while the server was down goes to the next turn", async () => {
    h = await createRuntimeHarness();
    let server = await h.serve();
    seedWorkspace(h.ws.root);
    const { id } = await json(await server.fetch("/sessions", { method: "POST", body: "{}" }), 201);
    await turn(h, server, id, "first", [[bash("printf changed > a.txt && rm img.bin")]]);
    const [m1] = await userMessageIds(server, id);
    await server.close();
    await h.runtime.close();
    writeFileSync(join(h.ws.root, "offline.txt"), "while down\n");

    const runtime = await createRuntime({ workspace: h.ws.root, env: h.env, log: memoryLogger(), toolServices: { shell: { env: { ...process.env, HOME: h.env.VEIL_HOME } } } });
    const started = await startServer({ runtime, secret: TEST_SECRET, port: 0, closeRuntime: true });
    const fetchAt = (path: string, init: RequestInit = {}) => fetch(`${started.url}${path}`, { ...init, headers: { authorization: `Bearer ${TEST_SECRET}`, "content-type": "application/json" } });
    server = { ...started, fetch: fetchAt } as typeof server;
    try {
      h.llm.enqueue(reply().text("done").stop());
      await json(await fetchAt(`/sessions/${id}/chat`, { method: "POST", body: JSON.stringify({ message: "after the restart" }) }));
      const [, m2] = await userMessageIds(server, id);
      expect((await checkpoints(server, id)).checkpoints.map((c) => [c.messageId, c.files])).toEqual([
        [m1, [{ path: "a.txt", change: "modified" }, { path: "img.bin", change: "deleted" }]],
        [m2, [{ path: "offline.txt", change: "added" }]],
      ]);
      // The tracker's local mirror is gone too: the contents come from the store.
      rmSync(join(h.env.VEIL_HOME!, "checkpoints"), { recursive: true, force: true });
      await json(await fetchAt(`/sessions/${id}/revert`, { method: "POST", body: JSON.stringify({ messageId: m1 }) }));
      expect(text(h.ws.root, "a.txt")).toBe("one\n");
      expect(existsSync(join(h.ws.root, "img.bin"))).toBe(true);
      expect(text(h.ws.root, "offline.txt")).toBeNull();
    } finally {
      await started.close();
      h.runtime = runtime;
    }
  });
});

const missing = unavailableUnlessCI(postgresUnavailable());
describe.skipIf(Boolean(missing))("checkpoints over HTTP (PostgreSQL)", () => {
  let cluster: PostgresCluster;
  beforeAll(async () => {
    cluster = await startPostgres();
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("the same write, edit, bash, revert, unrevert flow with the store on PostgreSQL", async () => {
    h = await createRuntimeHarness({ env: { VEIL_DATABASE_URL: await cluster.createDatabase() } });
    await revertFlow(h, await h.serve());
  });
});

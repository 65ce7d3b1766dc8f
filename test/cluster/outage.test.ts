import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { spawnServer } from "../helpers/spawned-server.js";
import { tmpWorkspace } from "../helpers/workspace.js";
import { chat, clusterFile, clusterUnavailable, logLine, messages, post, reply, watch, type ClusterNodes } from "../helpers/cluster-nodes.js";

// This file stops and restarts its PostgreSQL: it owns its cluster, shared with no other file.
const file = clusterFile("outage.test", (pg) => pg.resume());

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** `veil serve` on `url`, expected to exit before listening: its error text. */
async function failedStart(url: string): Promise<{ error: string; ms: number }> {
  const ws = tmpWorkspace();
  const started = Date.now();
  try {
    await spawnServer(ws.root, { baseUrl: "http://127.0.0.1:9/v1", env: { VEIL_DATABASE_URL: url } });
    throw new Error("veil serve started on a database that is not there");
  } catch (error) {
    return { error: (error as Error).message, ms: Date.now() - started };
  } finally {
    ws.cleanup();
  }
}

describe.skipIf(!!clusterUnavailable)("the database at start", () => {
  it("retries an unreachable server with backoff, then exits naming the URL with the password hidden", async () => {
    const url = `postgres://veil:secret-pw@127.0.0.1:${await closedPort()}/veil`;
    const { error, ms } = await failedStart(url);
    expect(error).toMatch(/exited \(1\)/);
    expect(error).toContain("STORE_UNAVAILABLE");
    expect(error).toContain("postgres://veil:***@127.0.0.1:");
    expect(error).not.toContain("secret-pw");
    // Six attempts, 250 ms doubling to 4 s between them: about 7.75 s of waiting.
    expect((error.match(/PostgreSQL unreachable; retrying/g) ?? []).length).toBe(5);
    expect(ms).toBeGreaterThan(7000);
  }, 60_000);

  it("refuses a database that does not exist at once, without retrying", async () => {
    const { error } = await failedStart(file.pg.urlFor("no_such_database"));
    expect(error).toContain("CONFIG_ERROR");
    expect(error).toContain(`postgres://postgres:***@127.0.0.1:${file.pg.port}/no_such_database`);
    expect(error).not.toContain("secret-pw");
    expect(error).not.toMatch(/retrying/);
  }, 60_000);
});

describe.skipIf(!!clusterUnavailable)("the database going down mid-run", () => {
  it("keeps both nodes up, refuses what it cannot store, loses nothing acknowledged, and carries on when it is back", async () => {
    const cluster = await file.start(2);
    const [a, b] = cluster.nodes as [NonNullable<ClusterNodes["nodes"][0]>, NonNullable<ClusterNodes["nodes"][0]>];
    const { llm } = cluster;
    llm.respond((req) => {
      const last = (req.body as { messages: { role: string; content: unknown }[] }).messages.at(-1)!;
      if (last.role === "tool") return reply().text("after the tool").stop();
      if (last.content === "run it") return reply().tool("bash", { command: "sleep 1; echo slept" }).stop();
      return reply().text(`answer to ${String(last.content)}`).stop();
    });
    const session = await post(a, "/sessions");
    expect((await chat(a, session.id, "first")).content).toBe("answer to first");
    const sse = await watch(a, (d) => d.type === "chat.done" && d.content === "answer to after the outage");
    const toolStarted = await watch(a, (d) => d.type === "tool.start" && d.sessionId === session.id);
    const cut = a.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "run it" }) }).then(async (r) => ({ status: r.status, body: await r.json() }));
    await toolStarted.done;

    await file.pg.pause();
    // While down: a chat is not acknowledged (no 2xx), and the answer says why.
    const refused = await b.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "while down" }) });
    expect(refused.status).toBe(503);
    const refusal = await refused.json();
    expect(refusal.error.code).toBe("STORE_UNAVAILABLE");
    expect(JSON.stringify(refusal)).not.toContain("secret-pw");
    await file.pg.resume();

    // The cut run either got through once the database was back, or failed with a clear error
    // (the database's error, or LEASE_LOST when another node took the session over meanwhile).
    const cutAnswer = await cut;
    if (cutAnswer.status < 300 && !cutAnswer.body.error) expect(cutAnswer.body.content).toBe("after the tool");
    else expect(cutAnswer.body.error.code).toMatch(/^(STORE_UNAVAILABLE|LEASE_LOST)$/);

    // Both nodes are alive and serve again; B's run reaches A's SSE stream (its listener reconnected).
    expect(a.child.exitCode).toBeNull();
    expect(b.child.exitCode).toBeNull();
    expect((await chat(b, session.id, "after the outage")).content).toBe("answer to after the outage");
    await sse.done;
    const other = await post(b, "/sessions");
    expect((await chat(a, other.id, "new session")).content).toBe("answer to new session");

    // Every acknowledged message is stored once; the refused one is nowhere.
    const users = (await messages(a, session.id)).filter((m: any) => m.role === "user").map((m: any) => m.content);
    expect(users).toEqual(["first", "run it", "after the outage"]);
    await logLine(a, /PostgreSQL/);
    for (const node of [a, b]) expect(node.stderr()).not.toContain("secret-pw");
  }, 120_000);
});

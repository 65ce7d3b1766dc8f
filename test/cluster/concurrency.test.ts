import { describe, expect, it } from "vitest";
import { withClient } from "../helpers/postgres.js";
import { clusterFile, clusterUnavailable, json, post, reply } from "../helpers/cluster-nodes.js";

const file = clusterFile("concurrency.test");

const CHATS = 20;
const SESSIONS = 4;

describe.skipIf(!!clusterUnavailable)("many chats over three nodes at once", () => {
  it("answers every chat and stores each message once, with per-session seq unique and gap-free", async () => {
    const cluster = await file.start(3);
    const { nodes, llm, url } = cluster;
    let calls = 0;
    // Each run calls one tool, so runs overlap and inbox messages arrive mid-run.
    llm.respond((req) => {
      const last = (req.body as { messages: { role: string; content: unknown }[] }).messages.at(-1)!;
      if (last.role === "tool") return reply().text("done with the tool").stop();
      return reply().tool("bash", { command: "echo tool" }, { id: `call_${++calls}` }).stop();
    });
    const sessions = await Promise.all(Array.from({ length: SESSIONS }, (_, i) => post(nodes[i % nodes.length]!, "/sessions")));
    // Chat i goes to session i % 4 through node i % 3: every session gets chats from every node.
    const answers = await Promise.all(
      Array.from({ length: CHATS }, (_, i) => {
        const node = nodes[i % nodes.length]!;
        const session = sessions[i % SESSIONS]!;
        return json(node.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: `chat ${i}` }) }));
      }),
    );
    for (const answer of answers) expect(answer.content).toBe("done with the tool");

    await withClient(url, async (client) => {
      const users = await client.query<{ content: string; session_id: string }>("SELECT content, session_id FROM messages WHERE role = 'user' ORDER BY content");
      expect(users.rows.map((r) => r.content).sort()).toEqual(Array.from({ length: CHATS }, (_, i) => `chat ${i}`).sort());
      for (const row of users.rows) expect(row.session_id).toBe(sessions[Number(row.content.split(" ")[1]) % SESSIONS]!.id);
      // Message seq: 1..n per session, no gap, no repeat.
      const seqs = await client.query<{ session_id: string; n: number; max: number; distinct: number }>(
        "SELECT session_id, COUNT(*)::int AS n, MAX(seq) AS max, COUNT(DISTINCT seq)::int AS distinct FROM messages GROUP BY session_id",
      );
      expect(seqs.rows).toHaveLength(SESSIONS);
      for (const row of seqs.rows) expect([row.distinct, row.max]).toEqual([row.n, row.n]);
      // Every tool call has exactly one result row and ended done; nothing is left in an inbox.
      const calls = await client.query<{ id: string; session_id: string; state: string }>("SELECT id, session_id, state FROM tool_calls");
      const results = await client.query<{ tool_call_id: string; session_id: string }>("SELECT tool_call_id, session_id FROM messages WHERE role = 'tool'");
      expect(calls.rows.every((c) => c.state === "done")).toBe(true);
      expect(results.rows.map((r) => `${r.session_id}/${r.tool_call_id}`).sort()).toEqual(calls.rows.map((c) => `${c.session_id}/${c.id}`).sort());
      expect((await client.query("SELECT 1 FROM inbox")).rowCount).toBe(0);
      // Event seq unique per session, and every session's runs ended.
      const events = await client.query<{ session_id: string; n: number; distinct: number; done: number }>(
        "SELECT session_id, COUNT(*)::int AS n, COUNT(DISTINCT seq)::int AS distinct, COUNT(*) FILTER (WHERE type = 'chat.done')::int AS done FROM events GROUP BY session_id",
      );
      for (const row of events.rows) {
        expect(row.distinct).toBe(row.n);
        expect(row.done).toBeGreaterThan(0);
      }
      const runs = events.rows.reduce((sum, row) => sum + row.done, 0);
      // Every model call but a run's last asked for a tool: no call was made twice or lost.
      expect(llm.completionRequests.length).toBe(calls.rows.length + runs);
      const statuses = await client.query<{ status: string }>("SELECT status FROM sessions");
      expect(statuses.rows.every((r) => r.status === "idle")).toBe(true);
    });
  }, 120_000);
});

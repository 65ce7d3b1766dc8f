import { afterEach, describe, expect, it } from "vitest";
import { eventually } from "../helpers/cluster-nodes.js";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { built, spawnServer, type SpawnedServer } from "../helpers/spawned-server.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let llm: FakeLlm | undefined;
let ws: TempWorkspace | undefined;
const servers: SpawnedServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.kill();
  await llm?.close();
  ws?.cleanup();
  llm = undefined;
  ws = undefined;
});

interface Run {
  at: string;
  sessionId: string | null;
  status: string;
  error?: string;
  startedAt: string | null;
  finishedAt: string;
}

const json = async (res: Promise<Response>) => {
  const answer = await res;
  return { status: answer.status, body: (await answer.json()) as any };
};

describe.skipIf(!built)("schedules over HTTP across a kill -9 and a restart of veil serve (real time)", () => {
  it("ends the killed run as INTERRUPTED, fires the times missed while down once, then goes on on the grid", async () => {
    llm = await startFakeLlm();
    let hold = true;
    llm.respond(() => (hold ? reply().waitFor(new Promise(() => undefined)).stop() : reply().text("done").stop()));
    ws = tmpWorkspace();
    const first = await spawnServer(ws.root, { baseUrl: llm.baseUrl });
    servers.push(first);

    const created = await json(first.fetch("/schedules", { method: "POST", body: JSON.stringify({ agent: "default", prompt: "every second", everySeconds: 1 }) }));
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    await llm.waitForRequests(1);
    const running = await eventually(async () => {
      const { body } = await json(first.fetch(`/schedules/${id}`));
      return body.running?.sessionId ? (body.running as { at: string; sessionId: string }) : undefined;
    }, "the first run to name its session");
    hold = false;
    await first.kill();
    const killedAt = Date.now();
    // The passing of due times while nothing runs is what is tested: at least two go by.
    await new Promise((resolve) => setTimeout(resolve, 2500));

    const second = await spawnServer(ws.root, { baseUrl: llm.baseUrl });
    servers.push(second);
    const startedAt = Date.now();
    const runs = await eventually(async () => {
      const { body } = await json(second.fetch(`/schedules/${id}/runs`));
      const list = body.runs as Run[];
      return list.filter((r) => r.status === "ok").length >= 3 && list;
    }, "three runs after the restart", 60_000);
    expect((await json(second.fetch(`/schedules/${id}`, { method: "PATCH", body: JSON.stringify({ enabled: false }) }))).status).toBe(200);

    const ordered = [...runs].reverse();
    expect(ordered[0]).toMatchObject({ at: running.at, sessionId: running.sessionId, status: "error", error: expect.stringMatching(/^INTERRUPTED: /), finishedAt: expect.any(String) });
    // Everything missed while down is one run, at the first missed due time.
    const missed = ordered.filter((r) => Date.parse(r.at) > Date.parse(running.at) && Date.parse(r.at) < startedAt - 1000);
    expect(missed).toHaveLength(1);
    expect(Date.parse(missed[0]!.at)).toBeLessThanOrEqual(killedAt + 1000);
    expect(missed[0]).toMatchObject({ status: "ok" });
    // No due time twice; all on the schedule's one-second grid; each ran in a session of its own.
    const times = ordered.map((r) => Date.parse(r.at));
    expect(new Set(times).size).toBe(times.length);
    for (const at of times) expect((at - times[0]!) % 1000).toBe(0);
    const ok = ordered.filter((r) => r.status === "ok");
    expect(new Set(ok.map((r) => r.sessionId)).size).toBe(ok.length);
    for (const run of ok) expect(Date.parse(run.startedAt!)).toBeGreaterThanOrEqual(startedAt - 1000);
  }, 120_000);
});

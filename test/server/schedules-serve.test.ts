import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
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

/** Resolves once Date.now() is past `ms` (epoch): time itself has to pass, no event says so. */
async function untilWallClockPasses(ms: number): Promise<void> {
  while (Date.now() <= ms) await new Promise((resolve) => setTimeout(resolve, ms - Date.now() + 1));
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
    // What the killed process left: the due time it would have fired next.
    const store = SqliteStore.open(join(ws.root, ".veil", "veil.db"));
    const nextDue = (await store.getSchedule(id))!.next_run_at;
    await store.close();
    // The passing of due times while nothing runs is what is tested: the next one and the one
    // after it go by before a node runs again (a wait on the wall clock, as long as that needs).
    await untilWallClockPasses(nextDue + 1000);

    const restartedFrom = Date.now();
    const second = await spawnServer(ws.root, { baseUrl: llm.baseUrl });
    servers.push(second);
    const runs = await eventually(async () => {
      const { body } = await json(second.fetch(`/schedules/${id}/runs`));
      const list = body.runs as Run[];
      return list.filter((r) => r.status === "ok").length >= 3 && list;
    }, "three runs after the restart", 60_000);
    expect((await json(second.fetch(`/schedules/${id}`, { method: "PATCH", body: JSON.stringify({ enabled: false }) }))).status).toBe(200);

    const ordered = [...runs].reverse();
    expect(ordered[0]).toMatchObject({ at: running.at, sessionId: running.sessionId, status: "error", error: expect.stringMatching(/^INTERRUPTED: /), finishedAt: expect.any(String) });
    // Before the kill the first node may have skipped due times while its run was held.
    const afterKill = ordered.filter((r) => Date.parse(r.at) >= nextDue);
    expect(ordered.slice(1, ordered.length - afterKill.length).every((r) => r.status === "skipped")).toBe(true);
    // Everything missed while down is one run, at the first missed due time; the next is the
    // first on the grid after that run was taken, so the times missed between fired not at all.
    const [caughtUp, onGrid] = afterKill;
    expect(caughtUp).toMatchObject({ at: new Date(nextDue).toISOString(), status: "ok" });
    const takenAt = Date.parse(caughtUp!.startedAt!);
    expect(takenAt).toBeGreaterThan(nextDue + 1000);
    expect(Date.parse(onGrid!.at)).toBe(nextDue + (Math.floor((takenAt - nextDue) / 1000) + 1) * 1000);
    // No due time twice; all on the schedule's one-second grid; each ran in a session of its own, on the restarted node.
    const times = ordered.map((r) => Date.parse(r.at));
    expect(new Set(times).size).toBe(times.length);
    for (const at of times) expect((at - times[0]!) % 1000).toBe(0);
    // A due time that comes while the run before it still goes is skipped (a loaded machine).
    for (const run of afterKill) if (run.status !== "ok") expect(run).toMatchObject({ status: "skipped", error: expect.stringContaining("still going") });
    const ok = afterKill.filter((r) => r.status === "ok");
    expect(new Set(ok.map((r) => r.sessionId)).size).toBe(ok.length);
    for (const run of ok) expect(Date.parse(run.startedAt!)).toBeGreaterThanOrEqual(restartedFrom);
  }, 120_000);
});

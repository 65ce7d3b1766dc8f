import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { memoryLogger } from "../../src/base/log.js";
import { ScheduleRunner, type ScheduleSessions } from "../../src/core/schedules/runner.js";
import type { RunResult } from "../../src/engines/types.js";
import type { SessionRow } from "../../src/store/store.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";

/** Sessions whose runs end only when the test says so: `sent` lists the prompts in the order their runs began. */
function heldSessions() {
  const ends: ((result: RunResult) => void)[] = [];
  const sent: string[] = [];
  let n = 0;
  const sessions: ScheduleSessions = {
    async create() {
      return { id: `sess_${++n}` } as SessionRow;
    },
    async send(_id, message) {
      sent.push(message);
      return { messageId: `msg_${sent.length}`, delivery: "started", result: new Promise<RunResult>((resolve) => ends.push(resolve)) };
    },
    async release() {},
  };
  const endAll = () => {
    for (const end of ends.splice(0)) end({ stopReason: "stop" } as RunResult);
  };
  return { sessions, sent, endAll };
}

describe("ScheduleRunner on several nodes (one SQLite store, a hand-moved clock)", () => {
  let dir: string;
  let store: SqliteStore;
  let clock: ManualClock;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "veil-runner-"));
    clock = new ManualClock();
    store = SqliteStore.open(join(dir, "veil.db"), { clock });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const runner = (nodeId: string, sessions: ScheduleSessions, extra: { maxConcurrentRuns?: number } = {}) =>
    new ScheduleRunner({ store, clock, log: memoryLogger(), nodeId, sessions, singleNode: false, disable: async () => {}, ...extra });

  async function createSchedule(id: string): Promise<void> {
    const at = new Date(clock.now()).toISOString();
    await store.createSchedule({ id, agent: "default", prompt: `prompt of ${id}`, cron: null, every_seconds: 1, session: "new", enabled: true, next_run_at: clock.now(), created_at: at, updated_at: at, owner_key: null });
  }

  /** Fires the schedule's stored due time on `on`, and lets the run it starts get to its model call. */
  async function fireDue(on: ScheduleRunner, id: string): Promise<void> {
    const row = (await store.getSchedule(id))!;
    await on.fire(row, row.next_run_at!);
    await clock.advance(0);
  }

  it("skips due times while another node renews its run's mark, and takes over once the renewals stop", async () => {
    const a = heldSessions();
    const b = heldSessions();
    const [nodeA, nodeB] = [runner("node-a", a.sessions), runner("node-b", b.sessions)];
    await createSchedule("sch1");
    await fireDue(nodeA, "sch1");
    expect(a.sent).toEqual(["prompt of sch1"]);
    const first = (await store.getSchedule("sch1"))!.active_at!;

    // A run longer than the staleness window: node A's heartbeats keep its mark fresh.
    await clock.advance(40_000);
    expect((await store.getSchedule("sch1"))!.active_seen_at).toBeGreaterThan(clock.now() - 10_000);
    await fireDue(nodeB, "sch1");
    expect(b.sent).toEqual([]);
    expect(await store.listScheduleRuns("sch1", 10)).toMatchObject([{ status: "skipped", error: expect.stringContaining("still going"), started_at: null }]);

    // Node A goes silent (as a killed process does): after 30 s without a renewal its mark counts as cut.
    nodeA.stop();
    await clock.advance(20_000);
    await fireDue(nodeB, "sch1");
    expect(b.sent).toEqual([]);
    await clock.advance(15_000);
    await fireDue(nodeB, "sch1");
    expect(b.sent).toEqual(["prompt of sch1"]);
    const runs = await store.listScheduleRuns("sch1", 10);
    expect(runs.find((r) => r.at === first)).toMatchObject({ status: "error", error: expect.stringMatching(/^INTERRUPTED: /), session_id: "sess_1" });
    expect((await store.getSchedule("sch1"))!.active_node).toBe("node-b");

    // The cut run's late end records nothing over the takeover; node B's run ends as usual.
    a.endAll();
    await nodeA.idle();
    b.endAll();
    await nodeB.idle();
    const after = await store.listScheduleRuns("sch1", 10);
    expect(after.filter((r) => r.at === first)).toHaveLength(1);
    expect(after[0]).toMatchObject({ status: "ok", session_id: "sess_1", started_at: expect.any(String) });
    expect((await store.getSchedule("sch1"))!.active_at).toBeNull();
  });

  it("runs at most maxConcurrentRuns at once; a run waiting for a place when the node stops ends as CANCELLED", async () => {
    const held = heldSessions();
    const node = runner("node-a", held.sessions, { maxConcurrentRuns: 1 });
    for (const id of ["sch1", "sch2", "sch3"]) await createSchedule(id);
    for (const id of ["sch1", "sch2", "sch3"]) await fireDue(node, id);
    // All three due times are taken and marked; one runs.
    expect((await store.listSchedules()).map((s) => s.active_at !== null)).toEqual([true, true, true]);
    expect(held.sent).toEqual(["prompt of sch1"]);
    held.endAll();
    await clock.advance(0);
    expect(held.sent).toEqual(["prompt of sch1", "prompt of sch2"]);

    node.stop();
    held.endAll();
    await node.idle();
    expect(held.sent).toHaveLength(2);
    const [, , third] = await Promise.all(["sch1", "sch2", "sch3"].map(async (id) => (await store.listScheduleRuns(id, 10))[0]));
    expect(third).toMatchObject({ status: "error", error: expect.stringMatching(/^CANCELLED: /), session_id: null });
    expect((await store.listSchedules()).every((s) => s.active_at === null)).toBe(true);
  });
});

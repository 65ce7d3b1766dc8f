/**
 * What hooks and remote methods publish for a session goes through its live run's writer
 * while it runs, and to the event log once it ended: a real SQLite store, real event logs.
 */
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import type { VeilEvent } from "../../src/base/events.js";
import { randomIds } from "../../src/base/ids.js";
import { memoryLogger } from "../../src/base/log.js";
import { EventLog } from "../../src/core/event-log.js";
import { InProcessEventBus } from "../../src/core/memory-bus.js";
import { RunWriters } from "../../src/core/run-writers.js";
import { SessionWriter } from "../../src/core/session-writer.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";
import { reply } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

describe("run writers", () => {
  let ws: TempWorkspace;
  let store: SqliteStore;
  /** Two event logs over one store, each with its own bus: which one an event went through shows who wrote it. */
  const logs: { log: EventLog; seen: VeilEvent[] }[] = [];
  beforeEach(async () => {
    ws = tmpWorkspace();
    store = SqliteStore.open(join(ws.root, "veil.db"));
    await store.createSession({ id: "s1", agent: "default", mode: "chat" });
    for (let i = 0; i < 2; i++) {
      const bus = new InProcessEventBus();
      const seen: VeilEvent[] = [];
      bus.subscribe({}, (e) => seen.push(e));
      logs.push({ log: new EventLog({ store, bus, clock: systemClock, log: memoryLogger() }), seen });
    }
  });
  afterEach(async () => {
    for (const { log } of logs.splice(0)) await log.flush();
    await store.close();
    ws.cleanup();
  });

  const hookRun = { type: "hook.run" as const, event: "PreToolUse", command: "true", exitCode: 0, durationMs: 1, blocked: false };
  const runWriter = (i: number) => new SessionWriter({ sessionId: "s1", store, events: logs[i]!.log, ids: randomIds, now: () => Date.now() });

  it("sends a session's events through the writer of its live run, and to the event log once that run let go", async () => {
    const [plain, run] = [logs[0]!, logs[1]!];
    const writers = new RunWriters(plain.log);
    await writers.publish("s1", hookRun);
    const letGo = writers.hold(runWriter(1));
    await writers.publish("s1", { type: "method.pending", id: "m1", method: "pick", data: null, createdAt: "2026-01-01T00:00:00.000Z" });
    // Another session's events are not that run's.
    await writers.publish("s2", hookRun);
    letGo();
    await writers.publish("s1", { type: "method.done", id: "m1", timedOut: false });
    expect(plain.seen.map((e) => `${e.sessionId} ${e.type}`)).toEqual(["s1 hook.run", "s2 hook.run", "s1 method.done"]);
    expect(run.seen.map((e) => `${e.sessionId} ${e.type}`)).toEqual(["s1 method.pending"]);
  });

  it("a run that ended does not let go of the writer of the run after it", async () => {
    const writers = new RunWriters(logs[0]!.log);
    const first = writers.hold(runWriter(0));
    const second = runWriter(1);
    writers.hold(second);
    first();
    expect(writers.writerOf("s1")).toBe(second);
  });
});

describe("a runtime's hooks during a run (wired through its run writers)", () => {
  let h: RuntimeHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("still publish hook.run, between the call's tool.start and tool.end", async () => {
    h = await createRuntimeHarness({ settings: { hooks: { PreToolUse: [{ matcher: "bash", hooks: [{ type: "command", command: "true" }] }] } } });
    const session = await h.runtime.sessions.create({ agent: "default" });
    h.llm.enqueue(reply().tool("bash", { command: "echo hi" }).stop(), reply().text("done").stop());
    await (await h.runtime.sessions.send(session.id, "run it")).result;
    await h.runtime.events.flush();
    const types = (await h.runtime.store.listEvents(session.id)).map((e) => e.type);
    expect(types.indexOf("hook.run")).toBeGreaterThan(types.indexOf("tool.start"));
    expect(types.indexOf("hook.run")).toBeLessThan(types.indexOf("tool.end"));
  });
});

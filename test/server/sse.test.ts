import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { systemClock } from "../../src/base/clock.js";
import { memoryLogger } from "../../src/base/log.js";
import { EventLog } from "../../src/core/event-log.js";
import { InProcessEventBus } from "../../src/core/memory-bus.js";
import { sseResponse } from "../../src/server/sse.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { readSse } from "../helpers/sse-client.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;
let store: SqliteStore;
let bus: InProcessEventBus;
let log: EventLog;

beforeEach(() => {
  ws = tmpWorkspace();
  store = SqliteStore.open(join(ws.root, "veil.db"));
  bus = new InProcessEventBus();
  log = new EventLog({ store, bus, clock: systemClock, log: memoryLogger() });
});
afterEach(async () => {
  await log.flush();
  await store.close();
  ws.cleanup();
});

describe("SSE streams", () => {
  it("drops a client that falls too far behind, and its reconnect replays every stored event it missed", async () => {
    let subscribers = 0;
    const original = bus.subscribe.bind(bus);
    bus.subscribe = (filter, handler) => {
      subscribers++;
      const off = original(filter, handler);
      return () => {
        subscribers--;
        off();
      };
    };
    const controller = new AbortController();
    const res = sseResponse({ bus, log, filter: { sessionId: "s" }, idField: "seq", signal: controller.signal, maxBufferedBytes: 2000 });
    expect(subscribers).toBe(1);
    // Nobody reads: the publisher keeps going and the stream is cut once ~2 KB are unread.
    for (let i = 0; i < 100; i++) void log.publish("s", { type: "session.state", status: "idle", reason: `r${i}` });
    await log.flush();
    expect(subscribers).toBe(0);
    const got = await readSse(res);
    expect(got.length).toBeLessThan(40);
    expect(got.length).toBeGreaterThan(0);
    const lastSeen = Number(got.at(-1)!.id);
    // Read up to the last stored event (a stream ended by a timer would cut a replay a loaded machine is slow to send).
    const again = sseResponse({ bus, log, filter: { sessionId: "s" }, idField: "seq", signal: controller.signal, lastEventId: lastSeen });
    const replayed = await readSse(again, { until: (m) => m.id === "100" });
    expect(replayed.map((e) => Number(e.id))).toEqual(Array.from({ length: 100 - lastSeen }, (_, i) => lastSeen + 1 + i));
    expect(replayed.at(-1)!.data).toMatchObject({ type: "session.state", sessionId: "s", seq: 100, reason: "r99" });
  });

  it("sends deltas live with no id, and a replay that races live events carries each stored event once, in order", async () => {
    for (let i = 1; i <= 5; i++) await log.publish("s", { type: "session.state", status: "running", reason: String(i) });
    const controller = new AbortController();
    const res = sseResponse({ bus, log, filter: { sessionId: "s" }, idField: "seq", signal: controller.signal, lastEventId: 2 });
    // Published while the replay reads the store.
    void log.publish("s", { type: "chat.chunk", content: "delta" });
    void log.publish("s", { type: "session.state", status: "idle", reason: "6" });
    await log.flush();
    setTimeout(() => controller.abort(), 50);
    const got = await readSse(res);
    const stored = got.filter((e) => e.id !== undefined).map((e) => Number(e.id));
    expect(stored).toEqual([3, 4, 5, 6]);
    const delta = got.find((e) => e.data?.type === "chat.chunk");
    expect(delta?.id).toBeUndefined();
    expect(delta?.data).toMatchObject({ content: "delta", sessionId: "s" });
    expect(delta?.data.seq).toBeUndefined();
  });

  it("ends when the client disconnects and unsubscribes", async () => {
    const controller = new AbortController();
    const res = sseResponse({ bus, log, filter: {}, idField: "gseq", signal: controller.signal });
    const reading = readSse(res);
    await log.publish("a", { type: "chat.chunk", content: "x" });
    controller.abort();
    const got = await reading;
    expect(got.map((e) => e.data?.content)).toEqual(["x"]);
  });

  it("hands the events of one step to a client as one chunk, in order, and a later lone event on its own", async () => {
    const controller = new AbortController();
    const res = sseResponse({ bus, log, filter: { sessionId: "s" }, idField: "seq", signal: controller.signal });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    expect(decoder.decode((await reader.read()).value)).toBe(": connected\n\n");
    // Published back to back, as the recorder does within one step: one write to the client, not twenty.
    for (let i = 0; i < 19; i++) void log.publish("s", { type: "chat.chunk", content: `d${i}` });
    await log.publish("s", { type: "session.state", status: "idle", reason: "step" });
    const step = decoder.decode((await reader.read()).value);
    const frames = step.split("\n\n").filter(Boolean);
    expect(frames).toHaveLength(20);
    expect(frames.slice(0, 19).map((f) => JSON.parse(f.slice("data: ".length)).content)).toEqual(Array.from({ length: 19 }, (_, i) => `d${i}`));
    expect(frames[19]).toMatch(/^id: 1\ndata: \{"type":"session.state"/);
    await log.publish("s", { type: "session.state", status: "running", reason: "next" });
    const lone = decoder.decode((await reader.read()).value);
    expect(lone).toMatch(/^id: 2\ndata: .*"reason":"next"\}\n\n$/);
    controller.abort();
    expect((await reader.read()).done).toBe(true);
  });

  it("replays big stored events in pages of about a megabyte, not a thousand events at a time", async () => {
    const big = "x".repeat(256 * 1024);
    for (let i = 1; i <= 40; i++) void log.publish("s", { type: "session.state", status: "idle", reason: `${i} ${big}` });
    for (let i = 41; i <= 3000; i++) void log.publish("s", { type: "session.state", status: "idle", reason: String(i) });
    await log.flush();
    const pageChars: number[] = [];
    const recording = {
      async replay(filter: { sessionId?: string }, after: number, limit?: number) {
        const page = await log.replay(filter, after, limit);
        pageChars.push(page.reduce((sum, event) => sum + event.wire.length, 0));
        return page;
      },
    };
    const res = sseResponse({ bus, log: recording, filter: { sessionId: "s" }, idField: "seq", signal: new AbortController().signal, lastEventId: 0 });
    const replayed = await readSse(res, { until: (m) => m.id === "3000" });
    expect(replayed.map((e) => Number(e.id))).toEqual(Array.from({ length: 3000 }, (_, i) => i + 1));
    // The first page asks for a few events; later ones as many as fit in a megabyte (one big event may pass it).
    expect(pageChars.filter((chars) => chars > 1024 * 1024 + big.length + 200)).toEqual([]);
    expect(pageChars.length).toBeLessThan(60);
  });
});

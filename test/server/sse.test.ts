import { describe, expect, it } from "vitest";
import { InProcessEventBus } from "../../src/core/memory-bus.js";
import { sseResponse } from "../../src/server/sse.js";
import { readSse } from "../helpers/sse-client.js";

describe("SSE streams", () => {
  it("drops a client that falls too far behind instead of buffering without bound", async () => {
    const bus = new InProcessEventBus();
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
    const res = sseResponse({ bus, filter: { sessionId: "s" }, idField: "seq", signal: controller.signal, maxQueued: 5 });
    expect(subscribers).toBe(1);
    // Nobody reads: the publisher keeps going and the stream is cut once 5 events are queued.
    for (let i = 0; i < 100; i++) bus.publish("s", { type: "chat.chunk", content: String(i) });
    expect(subscribers).toBe(0);
    const got = await readSse(res);
    expect(got.length).toBeLessThan(10);
    expect(got.length).toBeGreaterThan(0);
    // It reconnects and replays everything it missed from the bus buffer.
    const lastSeen = Number(got.at(-1)!.id);
    const again = sseResponse({ bus, filter: { sessionId: "s" }, idField: "seq", signal: controller.signal, lastEventId: lastSeen, until: Promise.resolve() });
    const replayed = await readSse(again);
    expect(replayed.map((e) => Number(e.id))).toEqual(Array.from({ length: 100 - lastSeen }, (_, i) => lastSeen + 1 + i));
  });

  it("ends when the client disconnects and unsubscribes", async () => {
    const bus = new InProcessEventBus();
    const controller = new AbortController();
    const res = sseResponse({ bus, filter: {}, idField: "gseq", signal: controller.signal });
    const reading = readSse(res);
    bus.publish("a", { type: "chat.chunk", content: "x" });
    controller.abort();
    const got = await reading;
    expect(got.map((e) => e.data?.content)).toEqual(["x"]);
  });
});

import { describe, expect, it } from "vitest";
import { InProcessEventBus } from "../../src/core/memory-bus.js";
import { eventBusConformance } from "../conformance/event-bus.js";

eventBusConformance("in-process", ({ replayEvents }) => new InProcessEventBus({ replayEvents, perSessionReplay: replayEvents }));

describe("InProcessEventBus memory bounds", () => {
  it("keeps replay rings for the most recently active sessions only, and never restarts a session's seq", () => {
    const bus = new InProcessEventBus({ replayEvents: 10, perSessionReplay: 10, replaySessions: 2 });
    bus.publish("a", { type: "chat.chunk", content: "a1" });
    bus.publish("b", { type: "chat.chunk", content: "b1" });
    bus.publish("c", { type: "chat.chunk", content: "c1" });
    expect(bus.replay({ sessionId: "a" }, 0)).toBeNull();
    expect(bus.replay({ sessionId: "c" }, 0)!.map((e) => e.seq)).toEqual([1]);
    const again = bus.publish("a", { type: "chat.chunk", content: "a2" });
    expect(again.seq).toBe(2);
    expect(bus.replay({ sessionId: "a" }, 1)!.map((e) => (e as { content: string }).content)).toEqual(["a2"]);
    expect(bus.replay({ sessionId: "b" }, 0)).toBeNull();
  });
});

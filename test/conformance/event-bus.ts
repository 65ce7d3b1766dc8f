import { describe, expect, it } from "vitest";
import type { EventBus, VeilEvent } from "../../src/base/events.js";

/** Any EventBus implementation (in-process now, cross-node later) must pass this. */
export function eventBusConformance(name: string, factory: (options: { replayEvents: number }) => EventBus) {
  describe(`EventBus conformance: ${name}`, () => {
    it("numbers events per session (seq) and globally (gseq), densely from 1", () => {
      const bus = factory({ replayEvents: 100 });
      const a1 = bus.publish("a", { type: "chat.chunk", content: "1" });
      const b1 = bus.publish("b", { type: "chat.chunk", content: "2" });
      const a2 = bus.publish("a", { type: "chat.chunk", content: "3" });
      expect([a1.seq, b1.seq, a2.seq]).toEqual([1, 1, 2]);
      expect([a1.gseq, b1.gseq, a2.gseq]).toEqual([1, 2, 3]);
      expect(a1).toMatchObject({ type: "chat.chunk", sessionId: "a", content: "1", ts: expect.any(Number) });
    });

    it("delivers to matching subscribers in publish order and stops after unsubscribe", () => {
      const bus = factory({ replayEvents: 100 });
      const seen: VeilEvent[] = [];
      const typed: VeilEvent[] = [];
      const off = bus.subscribe({ sessionId: "a" }, (e) => seen.push(e));
      bus.subscribe({ types: ["thinking.chunk"] }, (e) => typed.push(e));
      bus.publish("a", { type: "chat.chunk", content: "x" });
      bus.publish("b", { type: "thinking.chunk", content: "y" });
      bus.publish("a", { type: "thinking.chunk", content: "z" });
      off();
      bus.publish("a", { type: "chat.chunk", content: "after" });
      expect(seen.map((e) => (e as { content: string }).content)).toEqual(["x", "z"]);
      expect(typed.map((e) => (e as { content: string }).content)).toEqual(["y", "z"]);
    });

    it("isolates a throwing subscriber from the others and from the publisher", () => {
      const bus = factory({ replayEvents: 100 });
      const seen: string[] = [];
      bus.subscribe({}, () => {
        throw new Error("boom");
      });
      bus.subscribe({}, (e) => seen.push(e.type));
      expect(() => bus.publish("a", { type: "chat.chunk", content: "x" })).not.toThrow();
      expect(seen).toEqual(["chat.chunk"]);
    });

    it("replays what came after a sequence number, per session and globally", () => {
      const bus = factory({ replayEvents: 100 });
      for (let i = 1; i <= 5; i++) bus.publish(i % 2 ? "a" : "b", { type: "chat.chunk", content: String(i) });
      expect(bus.replay({ sessionId: "a" }, 1)!.map((e) => e.seq)).toEqual([2, 3]);
      expect(bus.replay({}, 3)!.map((e) => e.gseq)).toEqual([4, 5]);
      expect(bus.replay({}, 5)).toEqual([]);
      expect(bus.replay({ sessionId: "unknown" }, 0)).toEqual([]);
    });

    it("returns null when the bounded buffer no longer reaches back far enough", () => {
      const bus = factory({ replayEvents: 3 });
      for (let i = 1; i <= 10; i++) bus.publish("a", { type: "chat.chunk", content: String(i) });
      expect(bus.replay({}, 2)).toBeNull();
      expect(bus.replay({ sessionId: "a" }, 2)).toBeNull();
      expect(bus.replay({}, 7)!.map((e) => e.gseq)).toEqual([8, 9, 10]);
    });
  });
}

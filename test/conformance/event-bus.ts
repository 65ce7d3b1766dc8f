import { describe, expect, it } from "vitest";
import type { EventBus, VeilEvent, VeilEventBody } from "../../src/base/events.js";

const event = (sessionId: string, body: VeilEventBody, seq?: number): VeilEvent => ({ ...body, sessionId, ts: 1, ...(seq ? { seq, gseq: seq } : {}) }) as VeilEvent;

/** Any EventBus implementation (in-process now, cross-node later) must pass this. */
export function eventBusConformance(name: string, factory: () => EventBus) {
  describe(`EventBus conformance: ${name}`, () => {
    it("delivers to matching subscribers in delivery order and stops after unsubscribe", () => {
      const bus = factory();
      const seen: VeilEvent[] = [];
      const typed: VeilEvent[] = [];
      const off = bus.subscribe({ sessionId: "a" }, (e) => seen.push(e));
      bus.subscribe({ types: ["thinking.chunk"] }, (e) => typed.push(e));
      bus.deliver(event("a", { type: "chat.chunk", content: "x" }));
      bus.deliver(event("b", { type: "thinking.chunk", content: "y" }));
      bus.deliver(event("a", { type: "thinking.chunk", content: "z" }));
      off();
      bus.deliver(event("a", { type: "chat.chunk", content: "after" }));
      expect(seen.map((e) => (e as { content: string }).content)).toEqual(["x", "z"]);
      expect(typed.map((e) => (e as { content: string }).content)).toEqual(["y", "z"]);
    });

    it("hands over the event as given (its numbers are the log's)", () => {
      const bus = factory();
      const seen: VeilEvent[] = [];
      bus.subscribe({}, (e) => seen.push(e));
      const sent = event("a", { type: "session.state", status: "idle" }, 7);
      bus.deliver(sent);
      expect(seen[0]).toMatchObject({ type: "session.state", sessionId: "a", seq: 7, gseq: 7, status: "idle" });
    });

    it("isolates a throwing subscriber from the others and from the caller", () => {
      const bus = factory();
      const seen: string[] = [];
      bus.subscribe({}, () => {
        throw new Error("boom");
      });
      bus.subscribe({}, (e) => seen.push(e.type));
      expect(() => bus.deliver(event("a", { type: "chat.chunk", content: "x" }))).not.toThrow();
      expect(seen).toEqual(["chat.chunk"]);
    });
  });
}

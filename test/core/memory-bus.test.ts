import { describe, expect, it } from "vitest";
import type { VeilEvent } from "../../src/base/events.js";
import { InProcessEventBus } from "../../src/core/memory-bus.js";
import { eventBusConformance } from "../conformance/event-bus.js";

eventBusConformance("in-process", () => new InProcessEventBus());

describe("InProcessEventBus", () => {
  it("reports a throwing handler to onHandlerError and keeps delivering", () => {
    const errors: unknown[] = [];
    const bus = new InProcessEventBus({ onHandlerError: (e) => errors.push(e) });
    const seen: VeilEvent[] = [];
    bus.subscribe({}, () => {
      throw new Error("boom");
    });
    bus.subscribe({}, (e) => seen.push(e));
    bus.deliver({ type: "chat.chunk", content: "x", sessionId: "a", ts: 1 });
    expect(seen).toHaveLength(1);
    expect(String(errors[0])).toContain("boom");
  });
});

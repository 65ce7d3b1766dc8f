import { describe, expect, it, vi } from "vitest";
import { FlushScheduler } from "../../src/server/sse-batch.js";

/** A scheduler on a clock the test moves; flushes run on the real event loop. */
function setup(sliceSize = 50) {
  let clock = 1_000;
  const scheduler = new FlushScheduler({ windowMs: 10, loadFactor: 3, maxWindowMs: 100, sliceSize, now: () => clock });
  const flushed: string[] = [];
  const stream = (name: string, costMs = 0) => ({
    flush() {
      flushed.push(name);
      clock += costMs;
    },
  });
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
  return { scheduler, flushed, stream, turn, advance: (ms: number) => (clock += ms) };
}

describe("FlushScheduler", () => {
  it("flushes a lone stream at the next turn, and every stream pending in a window once", async () => {
    const { scheduler, flushed, stream, turn } = setup();
    const a = stream("a");
    expect(scheduler.delay()).toBeLessThanOrEqual(0);
    scheduler.schedule(a);
    scheduler.schedule(a);
    scheduler.schedule(stream("b"));
    await turn();
    expect(flushed).toEqual(["a", "b"]);
  });

  it("waits a window after a cheap flush, and stretches it to loadFactor × the cost of an expensive one", async () => {
    const { scheduler, stream, turn, advance } = setup();
    scheduler.schedule(stream("cheap", 1));
    await turn();
    await turn();
    expect(scheduler.delay()).toBe(10);
    advance(10);
    scheduler.schedule(stream("slow", 20));
    await turn();
    await turn();
    // 20 ms of writes: the next flush waits 60 ms from the end of this one.
    expect(scheduler.delay()).toBe(60);
    advance(59);
    expect(scheduler.delay()).toBe(1);
  });

  it("never stretches the window past maxWindowMs", async () => {
    const { scheduler, stream, turn } = setup();
    scheduler.schedule(stream("huge", 500));
    await turn();
    await turn();
    expect(scheduler.delay()).toBe(100);
  });

  it("sends what arrived during a stretched window when the window ends, not before", async () => {
    const { scheduler, flushed, stream, turn } = setup();
    scheduler.schedule(stream("first", 2));
    await turn();
    await turn();
    // The window is real time here (10 ms); the stream must still be flushed once it passes.
    const late = stream("late");
    scheduler.schedule(late);
    await turn();
    expect(flushed).toEqual(["first"]);
    await vi.waitFor(() => expect(flushed).toEqual(["first", "late"]));
  });

  it("flushes sliceSize clients per loop turn, serving other I/O in between, and counts every slice in the cost", async () => {
    const { scheduler, flushed, stream, turn } = setup(2);
    const order: string[] = [];
    const streams = ["a", "b", "c", "d", "e"].map((name) => ({ flush: () => (order.push(name), stream(name, 4).flush()) }));
    for (const s of streams) scheduler.schedule(s);
    // Something else the loop has to do, queued once per turn while the slices go.
    let probes = 0;
    const probe = () => {
      order.push(`probe${probes++}`);
      if (probes < 4) setImmediate(probe);
    };
    setImmediate(probe);
    await vi.waitFor(() => expect(flushed).toHaveLength(5));
    expect(order.filter((x) => !x.startsWith("probe"))).toEqual(["a", "b", "c", "d", "e"]);
    // No more than two clients between two probes.
    const runs = order.join(" ").split(/probe\d/).map((part) => part.trim().split(" ").filter(Boolean).length);
    expect(Math.max(...runs)).toBeLessThanOrEqual(2);
    await turn();
    await turn();
    // 5 × 4 ms over three slices: the next window is 3 × 20 ms.
    expect(scheduler.delay()).toBe(60);
  });
});

import { describe, expect, it, vi } from "vitest";
import { fairTurn, SLICE_MS } from "../../src/base/fair-turns.js";

/** Burns the CPU (a run's synchronous stretch: store writes, JSON) for `ms`. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe("fairTurn", () => {
  it("lets a lone caller go on at once", async () => {
    // A slice far longer than any pause a loaded machine can put between two calls: the
    // second call must still be within the first one's slice (with 10 ms it sometimes was not).
    vi.stubEnv("VEIL_FAIR_SLICE_MS", "60000");
    vi.resetModules();
    try {
      const fresh = await import("../../src/base/fair-turns.js");
      expect(fresh.SLICE_MS).toBe(60000);
      expect(fresh.fairTurn()).toBeUndefined();
      expect(fresh.fairTurn()).toBeUndefined();
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("past the slice, lets the loop poll between runs' steps, and every run still finishes", async () => {
    expect(SLICE_MS).toBeGreaterThan(0);
    const steps: string[] = [];
    let polledAfter = -1;
    // A callback of a later turn of the loop (as a /health request is): it must not wait for every step.
    setImmediate(() => setImmediate(() => (polledAfter = steps.length)));
    const run = async (name: string) => {
      for (let step = 0; step < 4; step++) {
        const wait = fairTurn();
        if (wait) await wait;
        busy(SLICE_MS / 4);
        steps.push(`${name}${step}`);
      }
    };
    await Promise.all(["a", "b", "c", "d", "e", "f", "g", "h"].map(run));
    expect(steps).toHaveLength(32);
    expect(polledAfter).toBeGreaterThan(0);
    expect(polledAfter).toBeLessThan(32);
  });
});

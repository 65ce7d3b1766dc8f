import { describe, expect, it } from "vitest";
import { gatedStart, SHELL_STARTS_AT_ONCE } from "../../../../src/tools/shared/shell/start-gate.js";

describe("shell start gate", () => {
  it("lets at most SHELL_STARTS_AT_ONCE starts run together, the rest in arrival order, and frees a slot when a start fails", async () => {
    let running = 0;
    let peak = 0;
    const order: number[] = [];
    const releases: (() => void)[] = [];
    const starts = Array.from({ length: SHELL_STARTS_AT_ONCE * 3 }, (_, i) =>
      gatedStart(async () => {
        running++;
        peak = Math.max(peak, running);
        order.push(i);
        await new Promise<void>((resolve) => releases.push(resolve));
        running--;
        if (i === 0) throw new Error("bash did not start");
        return i;
      }).then(
        (value) => ({ value }),
        (error: Error) => ({ error: error.message }),
      ),
    );
    // Release whichever starts are running until all have run.
    while (order.length < starts.length || releases.length > 0) {
      await new Promise((resolve) => setImmediate(resolve));
      releases.shift()?.();
    }
    const results = await Promise.all(starts);
    expect(peak).toBe(SHELL_STARTS_AT_ONCE);
    expect(order).toEqual(starts.map((_, i) => i));
    expect(results[0]).toEqual({ error: "bash did not start" });
    expect(results.slice(1)).toEqual(starts.slice(1).map((_, i) => ({ value: i + 1 })));
  });
});

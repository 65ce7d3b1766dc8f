import { describe, expect, it } from "vitest";
import { ChangeWatch } from "../../src/core/change-watch.js";

describe("ChangeWatch", () => {
  it("asks for a read first, after a change, after the recheck interval, and when forced; not otherwise", () => {
    let now = 0;
    const watch = new ChangeWatch({ monotonic: () => now }, 1000);
    expect(watch.mustRead()).toBe(true);
    expect(watch.mustRead()).toBe(false);
    watch.changed();
    expect(watch.mustRead()).toBe(true);
    expect(watch.mustRead()).toBe(false);
    now = 999;
    expect(watch.mustRead()).toBe(false);
    now = 2000;
    expect(watch.mustRead()).toBe(true);
    expect(watch.mustRead(true)).toBe(true);
    expect(watch.mustRead()).toBe(false);
  });

  it("keeps a change reported during a read for the next time", () => {
    const watch = new ChangeWatch({ monotonic: () => 0 }, 1000);
    expect(watch.mustRead()).toBe(true); // the read starts here...
    watch.changed(); // ...and a write lands while it runs
    expect(watch.mustRead()).toBe(true);
  });
});

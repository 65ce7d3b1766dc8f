import { describe, expect, it } from "vitest";
import { randomIds, sequentialIds } from "../../src/base/ids.js";

describe("ids", () => {
  it("random ids carry their prefix and 12 base64url characters, and do not repeat across refills of the byte pool", () => {
    const ids = Array.from({ length: 5000 }, () => randomIds.next("msg"));
    for (const id of ids) expect(id).toMatch(/^msg_[A-Za-z0-9_-]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
    // Consecutive ids share no bytes: the pool is consumed, never re-read.
    const tails = ids.map((id) => id.slice(4));
    expect(tails.filter((tail, i) => i > 0 && tail === tails[i - 1])).toEqual([]);
  });

  it("sequential ids count up for tests", () => {
    const ids = sequentialIds();
    expect([ids.next("a"), ids.next("b")]).toEqual(["a_000001", "b_000002"]);
  });
});

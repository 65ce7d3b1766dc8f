import { describe, expect, it } from "vitest";
import { ZERO_USAGE, type TokenUsage } from "../../src/base/usage.js";
import { addCost, costOf } from "../../src/llm/cost.js";

const usage = (over: Partial<TokenUsage>): TokenUsage => ({ ...ZERO_USAGE, ...over });
const PRICES = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };

describe("costOf", () => {
  it("prices uncached prompt, cache reads, cache writes and output per million tokens, each token once", () => {
    // 1,000,000 prompt tokens of which 600,000 cache hits and 100,000 cache writes; 200,000 output.
    const u = usage({ prompt_tokens: 1_000_000, cached_tokens: 600_000, cache_creation_tokens: 100_000, completion_tokens: 200_000 });
    expect(costOf(u, PRICES)).toBeCloseTo(0.3 * 3 + 0.6 * 0.3 + 0.1 * 3.75 + 0.2 * 15, 12);
  });

  it("equals the contract's formula when nothing was written to the cache", () => {
    const u = usage({ prompt_tokens: 12_345, cached_tokens: 10_000, completion_tokens: 678 });
    expect(costOf(u, PRICES)).toBeCloseTo(((12_345 - 10_000) * 3 + 10_000 * 0.3 + 678 * 15) / 1e6, 15);
  });

  it("falls back to the input price for absent cache prices and answers null without a cost entry", () => {
    const u = usage({ prompt_tokens: 2_000_000, cached_tokens: 1_000_000, completion_tokens: 1_000_000 });
    expect(costOf(u, { input: 1, output: 2 })).toBeCloseTo(1 + 1 + 2, 12);
    expect(costOf(u, undefined)).toBeNull();
    expect(costOf(ZERO_USAGE, PRICES)).toBe(0);
  });

  it("never goes negative when a provider reports more cached than prompt tokens", () => {
    expect(costOf(usage({ prompt_tokens: 10, cached_tokens: 25, cache_creation_tokens: 5 }), PRICES)).toBeCloseTo((25 * 0.3 + 5 * 3.75) / 1e6, 15);
  });

  it("adds call costs into a running total", () => {
    expect(addCost(null, null)).toBeNull();
    expect(addCost(null, 0.5)).toBe(0.5);
    expect(addCost(0.25, null)).toBe(0.25);
    expect(addCost(0.25, 0.5)).toBe(0.75);
  });
});

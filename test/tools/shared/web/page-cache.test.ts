import { describe, expect, it } from "vitest";
import { PageCache, PAGE_CACHE_TTL_MS, type CachedDocument } from "../../../../src/tools/shared/web/page-cache.js";

const doc = (url: string, chars: number): CachedDocument => ({ url, finalUrl: url, status: 200, contentType: "text/html", bytes: chars, text: "x".repeat(chars) });

describe("PageCache", () => {
  it("serves an entry until its TTL passes", () => {
    const cache = new PageCache();
    cache.set("a", doc("a", 10), 1_000);
    expect(cache.get("a", 1_000 + PAGE_CACHE_TTL_MS - 1)?.url).toBe("a");
    expect(cache.get("a", 1_000 + PAGE_CACHE_TTL_MS)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("evicts the least recently used entry beyond the entry bound", () => {
    const cache = new PageCache(60_000, 2, 1_000);
    cache.set("a", doc("a", 1), 0);
    cache.set("b", doc("b", 1), 0);
    cache.get("a", 1);
    cache.set("c", doc("c", 1), 2);
    expect(cache.get("b", 3)).toBeUndefined();
    expect(cache.get("a", 3)?.url).toBe("a");
    expect(cache.get("c", 3)?.url).toBe("c");
  });

  it("keeps the total size under its bound and skips documents larger than the bound", () => {
    const cache = new PageCache(60_000, 10, 100);
    cache.set("a", doc("a", 60), 0);
    cache.set("b", doc("b", 60), 0);
    expect(cache.get("a", 1)).toBeUndefined();
    expect(cache.get("b", 1)?.text.length).toBe(60);
    cache.set("huge", doc("huge", 101), 0);
    expect(cache.get("huge", 1)).toBeUndefined();
  });
});

import type { Disposable } from "../../types.js";

/** A fetched page, converted once, served page by page. */
export interface CachedDocument {
  url: string;
  finalUrl: string;
  status: number;
  contentType: string;
  bytes: number;
  text: string;
}

export const PAGE_CACHE_TTL_MS = 10 * 60_000;
const MAX_ENTRIES = 64;
/** About 48 MB of text: ten documents of the largest size web_fetch downloads by default. */
const MAX_TOTAL_CHARS = 24_000_000;

/**
 * Converted documents by key, for a whole runtime (keys name the session): entries expire
 * after the TTL and the least recently used go first when the count or the total size is
 * over its bound.
 */
export class PageCache implements Disposable {
  private readonly entries = new Map<string, { doc: CachedDocument; storedAt: number }>();
  private totalChars = 0;

  constructor(
    private readonly ttlMs = PAGE_CACHE_TTL_MS,
    private readonly maxEntries = MAX_ENTRIES,
    private readonly maxTotalChars = MAX_TOTAL_CHARS,
  ) {}

  get(key: string, now: number): CachedDocument | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (now - entry.storedAt >= this.ttlMs) {
      this.remove(key);
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.doc;
  }

  set(key: string, doc: CachedDocument, now: number): void {
    this.remove(key);
    if (doc.text.length > this.maxTotalChars) return;
    this.entries.set(key, { doc, storedAt: now });
    this.totalChars += doc.text.length;
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries && this.totalChars <= this.maxTotalChars) break;
      this.remove(oldest);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  /** Chars of text held. */
  get chars(): number {
    return this.totalChars;
  }

  private remove(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.totalChars -= entry.doc.text.length;
    this.entries.delete(key);
  }

  dispose(): void {
    this.entries.clear();
    this.totalChars = 0;
  }
}

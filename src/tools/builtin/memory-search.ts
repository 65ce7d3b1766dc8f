import { open, readFile, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import type MiniSearch from "minisearch";
import { Type, type Static } from "../../schema.js";
import { defineTool } from "../define.js";
import type { Disposable } from "../types.js";
import { memoryPathForScope, parseEntries, type MemoryEntry } from "../shared/memory-files.js";
import { truncateOutput } from "../shared/truncate.js";

const DEFAULT_RESULTS = 5;
const MAX_RESULTS = 50;
const MAX_ENTRY_PREVIEW = 2_000;
const CACHED_FILES = 16;
/** The indexes kept between searches cover at most this many bytes of memory files (an index is several times its text). */
export const CACHED_INDEX_BYTES = 8 * 1024 * 1024;
const INDEX_CACHE_KEY = "memory.searchIndex";

const Params = Type.Object({
  query: Type.String({ minLength: 1 }),
  scope: Type.Optional(
    Type.Unsafe<"agent" | "global">({
      type: "string",
      enum: ["agent", "global"],
      description: '"agent" (default) or "global"',
    }),
  ),
  maxResults: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_RESULTS, description: `Default ${DEFAULT_RESULTS}` }),
  ),
});

export const memorySearch = defineTool({
  name: "memory_search",
  description: "Search memory for relevant entries, best first.",
  params: Params,
  readOnly: true,
  async execute(input: Static<typeof Params>, ctx) {
    const scope = input.scope ?? "agent";
    const limit = input.maxResults ?? DEFAULT_RESULTS;
    const filePath = memoryPathForScope(ctx.paths.memoryDir, scope, ctx.agent.name);
    const cache = ctx.runtime.get(INDEX_CACHE_KEY, () => new MemoryIndexCache());
    const indexed = await cache.load(filePath);
    if (!indexed || indexed.entries.length === 0) {
      return { output: `No memory yet (scope: ${scope}), so nothing matches "${input.query}".`, details: { scope, filePath, results: 0 } };
    }
    const hits = indexed.index.search(input.query).slice(0, limit);
    if (hits.length === 0) {
      return {
        output: `No memory entries match "${input.query}" (scope: ${scope}, ${indexed.entries.length} entries searched).`,
        details: { scope, filePath, results: 0, entries: indexed.entries.length },
      };
    }
    const blocks = hits.map((hit, i) => {
      const entry = indexed.entries[hit.id as number]!;
      const content = entry.content.length > MAX_ENTRY_PREVIEW ? `${entry.content.slice(0, MAX_ENTRY_PREVIEW)}…` : entry.content;
      return `${i + 1}. [${readableTime(entry.timestamp)}] score ${hit.score.toFixed(2)}\n${content}`;
    });
    const head = `${hits.length} of ${indexed.entries.length} memory entries match "${input.query}" (scope: ${scope}), best first:`;
    return {
      output: truncateOutput(`${head}\n\n${blocks.join("\n\n")}`).text,
      details: {
        scope,
        filePath,
        results: hits.length,
        entries: indexed.entries.length,
        matches: hits.map((h) => ({ score: h.score, timestamp: indexed.entries[h.id as number]!.timestamp })),
      },
    };
  },
});

function readableTime(timestamp: string | null): string {
  if (timestamp === null) return "undated";
  return `${timestamp.slice(0, 10)} ${timestamp.slice(11, 16)} UTC`;
}

interface IndexedFile {
  key: string;
  size: number;
  ino: number;
  /** The file's last bytes when indexed: an append is recognised by finding them unchanged. */
  fingerprint: Buffer;
  entries: MemoryEntry[];
  index: MiniSearch<{ id: number; content: string }>;
}

const FINGERPRINT_BYTES = 64;
/** What memory_write appends: optional blank lines, then an entry header. */
const APPENDED_ENTRY = /^\n*## \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\r?\n/;

/**
 * Search indexes per memory file, keyed by (size, mtime, inode). When the file only
 * grew by appended entries (memory_write), the new entries are added to the existing
 * index; any other change rebuilds it. At most CACHED_FILES indexes of at most
 * `maxBytes` of files in all are kept, the least recently searched going first; a file
 * bigger than that is indexed for its search and not kept.
 */
export class MemoryIndexCache implements Disposable {
  private readonly files = new Map<string, IndexedFile>();

  constructor(private readonly maxBytes = CACHED_INDEX_BYTES) {}

  /** Bytes of memory files whose indexes are kept. */
  get cachedBytes(): number {
    let bytes = 0;
    for (const file of this.files.values()) bytes += file.size;
    return bytes;
  }

  has(path: string): boolean {
    return this.files.has(path);
  }

  async load(path: string): Promise<IndexedFile | undefined> {
    const info = await stat(path).catch(() => undefined);
    if (!info) {
      this.files.delete(path);
      return undefined;
    }
    const key = `${info.size}:${info.mtimeMs}:${info.ino}`;
    const cached = this.files.get(path);
    let next = cached && cached.key === key ? cached : undefined;
    if (!next && cached) next = await this.extend(path, cached, key, info.size, info.ino).catch(() => undefined);
    if (!next) {
      const bytes = await readFile(path).catch(() => Buffer.alloc(0));
      const entries = parseEntries(bytes.toString("utf8"));
      next = { key, size: bytes.length, ino: info.ino, fingerprint: lastBytes(bytes), entries, index: buildIndex(entries) };
    }
    this.files.delete(path);
    this.files.set(path, next);
    let bytes = this.cachedBytes;
    for (const [key, file] of this.files) {
      if (this.files.size <= CACHED_FILES && bytes <= this.maxBytes) break;
      this.files.delete(key);
      bytes -= file.size;
    }
    return next;
  }

  private async extend(path: string, cached: IndexedFile, key: string, size: number, ino: number): Promise<IndexedFile | undefined> {
    if (cached.ino !== ino || size <= cached.size) return undefined;
    const from = cached.size - cached.fingerprint.length;
    const handle = await open(path, "r");
    try {
      const buffer = Buffer.alloc(size - from);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, from);
      if (bytesRead !== buffer.length || !buffer.subarray(0, cached.fingerprint.length).equals(cached.fingerprint)) return undefined;
      const tail = buffer.subarray(cached.fingerprint.length).toString("utf8");
      if (!APPENDED_ENTRY.test(tail)) return undefined;
      const added = parseEntries(tail);
      if (added.some((e) => e.timestamp === null)) return undefined;
      const base = cached.entries.length;
      cached.index.addAll(added.map((entry, i) => ({ id: base + i, content: entry.content })));
      return { key, size, ino, fingerprint: lastBytes(buffer), entries: [...cached.entries, ...added], index: cached.index };
    } finally {
      await handle.close();
    }
  }

  dispose(): void {
    this.files.clear();
  }
}

function lastBytes(bytes: Buffer): Buffer {
  return Buffer.from(bytes.subarray(Math.max(0, bytes.length - FINGERPRINT_BYTES)));
}

/** BM25+ over entry text with folding, stop words, a light stemmer, prefix and typo tolerance. */
export function buildIndex(entries: MemoryEntry[]): MiniSearch<{ id: number; content: string }> {
  // Loaded on the first search, not at start-up.
  const MiniSearchClass = createRequire(import.meta.url)("minisearch") as typeof MiniSearch;
  const index = new MiniSearchClass<{ id: number; content: string }>({
    fields: ["content"],
    processTerm: normaliseTerm,
    searchOptions: {
      combineWith: "OR",
      prefix: (term) => term.length >= 3,
      fuzzy: (term) => (term.length >= 5 ? 0.2 : false),
      maxFuzzy: 2,
      weights: { fuzzy: 0.3, prefix: 0.5 },
    },
  });
  index.addAll(entries.map((entry, id) => ({ id, content: entry.content })));
  return index;
}

/** Most terms are plain ASCII words and need no accent or punctuation folding. */
const PLAIN_WORD = /^[a-z0-9]+$/;

const STOP_WORDS = new Set(
  "a an and are as at be but by do for from has have in is it its of on or that the this to was were will with".split(" "),
);

/** Lower-case, strip accents and punctuation, drop stop words, trim common English endings. */
export function normaliseTerm(term: string): string | null {
  const lower = term.toLowerCase();
  const folded = PLAIN_WORD.test(lower)
    ? lower
    : lower
        .normalize("NFKD")
        .replace(/\p{M}+/gu, "")
        .replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, "")
        .replace(/['’]s$/u, "");
  if (folded.length === 0 || STOP_WORDS.has(folded)) return null;
  return stem(folded);
}

function stem(word: string): string {
  if (word.length <= 4 || /\d/.test(word)) return word;
  if (word.endsWith("ies") && word.length > 5) return `${word.slice(0, -3)}y`;
  if (word.endsWith("ing") && word.length > 6) return undouble(word.slice(0, -3));
  if (word.endsWith("ed") && word.length > 5) return undouble(word.slice(0, -2));
  if (word.endsWith("ly") && word.length > 5) return word.slice(0, -2);
  if (word.endsWith("es") && /(?:ss|x|ch|sh|z)es$/.test(word)) return word.slice(0, -2);
  if (word.endsWith("s") && !word.endsWith("ss") && !word.endsWith("us") && !word.endsWith("is")) return word.slice(0, -1);
  return word;
}

function undouble(word: string): string {
  return /([b-df-hj-np-tv-z])\1$/.test(word) && !/(?:ll|ss|zz)$/.test(word) ? word.slice(0, -1) : word;
}

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { request } from "undici";
import { randomIds } from "../src/base/ids.js";
import { Resources } from "../src/core/resources.js";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { memorySearch } from "../src/tools/builtin/memory-search.js";
import { memoryWrite } from "../src/tools/builtin/memory-write.js";
import { webFetch } from "../src/tools/builtin/web-fetch.js";
import { formatEntry } from "../src/tools/shared/memory-files.js";
import { htmlToText } from "../src/tools/shared/web/html-to-text.js";
import type { RegisteredTool, ToolContext } from "../src/tools/types.js";
import { median, withBaseline, type BenchResult } from "./types.js";
import { benchConfig, benchToolContext } from "./context.js";

const ENTRIES = 10_000;
const PAGE_BYTES = 5 * 1024 * 1024;
const RUNS = 7;
const QUERIES = ["deploy staging", "postgres migration", "alice typescript", "kubernetes ingress", "billing invoices retry", "flaky test"];
const TOPIC_WORDS = (
  "service deploy staging production database postgres migration schema index cache redis queue worker retry timeout " +
  "billing invoice customer alice bob carol typescript javascript rust kubernetes ingress helm terraform bucket logs " +
  "metrics alert oncall incident review flaky test build pipeline release branch merge feature flag config secret"
).split(" ");
const SYLLABLES = "ka lo mi ne ru sa te vo bi da fe gu ho ji ku le mo na pi qu ri so tu va we xi yo zu".split(" ");
/** A vocabulary like real notes: common topic words plus a long tail of rarer ones. */
const RARE_WORDS = Array.from({ length: 3_000 }, (_, i) => SYLLABLES[i % 27]! + SYLLABLES[Math.floor(i / 27) % 27]! + SYLLABLES[Math.floor(i / 729) % 27]!);
const WORDS = TOPIC_WORDS;

/** memory_search on 10,000 entries and web_fetch of a 5 MB page, each against a plain baseline. */
export async function run(): Promise<BenchResult[]> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "veil-bench-memweb-")));
  const store = SqliteStore.open(join(root, "bench.db"));
  const runtime = new Resources();
  const session = new Resources();
  const html = bigHtml(PAGE_BYTES);
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "content-length": String(Buffer.byteLength(html)) }).end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  try {
    const ctx = benchToolContext(benchConfig(join(root, "ws"), { webFetch: { allowHosts: ["127.0.0.1"] } }), store, runtime, session);
    await store.createSession({ id: ctx.sessionId, agent: ctx.agent.name, mode: "chat" });
    const searchAfterWrite: number[] = [];
    const memoryFile = join(ctx.paths.memoryDir, "agents", ctx.agent.name, "MEMORY.md");
    writeMemory(memoryFile);

    // memory_search: first call builds the index; later calls reuse it (file unchanged).
    const coldStart = performance.now();
    await call(memorySearch, { query: QUERIES[0] }, ctx);
    const cold = performance.now() - coldStart;
    const warm = await timeEach(QUERIES, (q) => call(memorySearch, { query: q }, ctx));
    const scan = await timeEach(QUERIES, async (q) => void regexScan(memoryFile, q));
    for (let r = 0; r < 3; r++) {
      for (const q of QUERIES) {
        await call(memoryWrite, { content: `Fresh note ${r} about ${q}` }, ctx);
        const start = performance.now();
        await call(memorySearch, { query: q }, ctx);
        searchAfterWrite.push(performance.now() - start);
      }
    }

    // web_fetch: each run a distinct URL so the page cache does not answer.
    let n = 0;
    const fetchTool = await timeRuns(() => call(webFetch, { url: `http://127.0.0.1:${port}/page?${n++}` }, ctx));
    const rawFetch = await timeRuns(async () => {
      const res = await request(`http://127.0.0.1:${port}/raw?${n++}`);
      await res.body.arrayBuffer();
    });
    const convertOnly = await timeRuns(async () => void htmlToText(html, "http://127.0.0.1/"));
    const cachedUrl = `http://127.0.0.1:${port}/cached`;
    await call(webFetch, { url: cachedUrl }, ctx);
    const before = requests;
    const page2 = await timeRuns(() => call(webFetch, { url: cachedUrl, page: 2 }, ctx));
    if (requests !== before) throw new Error("page 2 refetched instead of using the cache");

    return [
      withBaseline({
        name: `memory_search, ${ENTRIES} entries (index cached)`,
        value: warm,
        unit: "ms",
        baseline: { name: "read + regex scan of the file", value: scan },
        target: "< 50 ms",
      }),
      { name: `memory_search, ${ENTRIES} entries, first call (builds index)`, value: round(cold), unit: "ms" },
      withBaseline({
        name: `memory_search right after a memory_write (appended entry joins the index)`,
        value: round(median(searchAfterWrite)),
        unit: "ms",
        baseline: { name: "first call (full index build)", value: round(cold) },
      }),
      withBaseline({
        name: "web_fetch, 5 MB HTML on loopback → text",
        value: fetchTool,
        unit: "ms",
        baseline: { name: "raw undici fetch of the same bytes", value: rawFetch },
        target: "< 300 ms",
        note: `conversion alone ${convertOnly} ms`,
      }),
      withBaseline({
        name: "web_fetch page 2 from the session cache",
        value: page2,
        unit: "ms",
        baseline: { name: "web_fetch page 1 (network + convert)", value: fetchTool },
      }),
    ];
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await session.dispose();
    await runtime.dispose();
    await store.close();
    rmSync(root, { recursive: true, force: true });
  }
}

function writeMemory(file: string): void {
  mkdirSync(dirname(file), { recursive: true });
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const parts: string[] = [];
  for (let i = 0; i < ENTRIES; i++) {
    const words = Array.from({ length: 12 + Math.floor(rand() * 20) }, () =>
      rand() < 0.15 ? TOPIC_WORDS[Math.floor(rand() * TOPIC_WORDS.length)] : RARE_WORDS[Math.floor(rand() * RARE_WORDS.length)],
    );
    parts.push(formatEntry(new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(), `Note ${i}: ${words.join(" ")}.`));
  }
  writeFileSync(file, parts.join(""));
}

/** The naive alternative: read the file and test every entry against each query word. */
function regexScan(file: string, query: string): number {
  const text = readFileSync(file, "utf8");
  const patterns = query.split(/\s+/).map((w) => new RegExp(`\\b${w}`, "i"));
  let hits = 0;
  for (const entry of text.split(/^## .*$/m)) if (patterns.some((p) => p.test(entry))) hits++;
  return hits;
}

function bigHtml(bytes: number): string {
  const parts = ["<!doctype html><html><head><title>Bench page</title><style>p{margin:0}</style><script>var x=1;</script></head><body>"];
  let size = parts[0]!.length;
  for (let i = 0; size < bytes; i++) {
    const block =
      `<h2>Section ${i}</h2><p>Paragraph ${i} with <a href="/link/${i}">a link</a>, <b>bold</b> and <code>code</code>. ` +
      `${WORDS.slice(i % 20, (i % 20) + 15).join(" ")}</p><ul><li>item one</li><li>item two</li></ul>` +
      `<table><tr><td>${i}</td><td>cell</td></tr></table><script>track(${i})</script>\n`;
    parts.push(block);
    size += block.length;
  }
  parts.push("</body></html>");
  return parts.join("");
}

async function timeEach<T>(inputs: T[], task: (input: T) => Promise<void>): Promise<number> {
  for (const input of inputs) await task(input);
  const times: number[] = [];
  for (let r = 0; r < 3; r++) {
    for (const input of inputs) {
      const start = performance.now();
      await task(input);
      times.push(performance.now() - start);
    }
  }
  return round(median(times));
}

async function timeRuns(task: () => Promise<void>): Promise<number> {
  await task();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    await task();
    times.push(performance.now() - start);
  }
  return round(median(times));
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

async function call(tool: RegisteredTool, input: Record<string, unknown>, ctx: ToolContext): Promise<void> {
  const result = await tool.execute(input, { ...ctx, toolCallId: randomIds.next("call") });
  const output = typeof result === "string" ? result : result.output;
  if (output.startsWith("Error:") || output.startsWith("No ")) throw new Error(`bench call failed: ${output.slice(0, 200)}`);
}


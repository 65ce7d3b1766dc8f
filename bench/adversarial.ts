/**
 * Memory under adversarial load. A real `veil serve` and a fake model that makes tool calls
 * with hostile arguments (huge offsets/limits, files with no newline or with gigabyte holes,
 * a grep that matches every line of a big tree, `**` over wide and deep trees, large writes,
 * hundreds of MB of shell output, a 10 MB page, big memory entries, a huge todo list), one
 * fresh server per tool kind; then fuzzed HTTP requests (garbage and oversized bodies, many
 * sessions, SSE clients that connect and drop) on one more server.
 *
 * Figures: the server's peak RSS per tool kind (the kernel's high-water mark, reset before each
 * call) against the same server's idle RSS; the spawn helper's peak; RSS after the HTTP fuzz
 * against idle. VEIL_BENCH_MAIN=<other build>/dist/src/main.js measures another build the same way.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { closeSync, copyFileSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { reply, startFakeLlm, type FakeLlm, type FakeRequest } from "../test/helpers/fake-llm.js";
import { createSession, startBenchServer, type BenchServer } from "./serve-harness.js";
import { withBaseline, type BenchResult } from "./types.js";

const MB = 1024 * 1024;
const mb = (bytes: number) => (bytes / MB).toFixed(0);
const HTTP_FUZZ_REQUESTS = Number(process.env.VEIL_BENCH_FUZZ_REQUESTS ?? 6000);

interface Fixtures {
  root: string;
  /** 64 MB of numbered 28-byte lines. */
  lines: string;
  /** 7.5 MB of one-character lines (under read_file's whole-file threshold). */
  shortLines: string;
  /** 64 MB with no newline at all. */
  oneLine: string;
  /** 8 KB of text lines, then a 1 GiB hole (reads as NUL bytes, no newline). */
  sparse: string;
  /** 10,000 files of 100 lines in 1,000 folders, plus a chain of 200 nested folders. */
  tree: string;
  /** 100,000 empty files in one folder. */
  wide: string;
  pageUrl: string;
  jsonUrl: string;
}

/** One tool call of a scripted turn; `results` are the turn's tool results so far. */
type Call = (results: string[]) => { name: string; args: Record<string, unknown> };

interface Case {
  kind: string;
  name: string;
  calls: Call[];
}

const call =
  (name: string, args: Record<string, unknown>): Call =>
  () => ({ name, args });

function cases(f: Fixtures, workspaceCopy: (name: string) => string): Case[] {
  const big = (mbytes: number, unit: string) => unit.repeat(Math.ceil((mbytes * MB) / unit.length));
  const huge = 1_000_000_000;
  return [
    { kind: "read_file", name: "64 MB file, limit 1e9", calls: [call("read_file", { file: f.lines, offset: 1, limit: huge })] },
    { kind: "read_file", name: "64 MB file, offset 2e6, limit 1e9", calls: [call("read_file", { file: f.lines, offset: 2_000_000, limit: huge })] },
    { kind: "read_file", name: "7.5 MB of 1-char lines, limit 1e9", calls: [call("read_file", { file: f.shortLines, limit: huge })] },
    { kind: "read_file", name: "64 MB with no newline", calls: [call("read_file", { file: f.oneLine, limit: huge })] },
    { kind: "read_file", name: "8 KB text + 1 GiB hole", calls: [call("read_file", { file: f.sparse, offset: 1, limit: huge })] },
    { kind: "grep", name: "'.' over 10k files, recursive", calls: [call("grep", { pattern: ".", path: f.tree, recursive: true })] },
    { kind: "grep", name: "'line' over 10k files, 20 context lines", calls: [call("grep", { pattern: "line", path: f.tree, recursive: true, context_lines: 20 })] },
    { kind: "grep", name: "'line' in the 64 MB file", calls: [call("grep", { pattern: "line", path: f.lines })] },
    { kind: "glob", name: "**/* over the tree, limit 5000", calls: [call("glob", { pattern: "**/*", cwd: f.tree, limit: 5000 })] },
    { kind: "glob", name: "**/**/**/*.txt over the tree", calls: [call("glob", { pattern: "**/**/**/*.txt", cwd: f.tree, limit: 5000 })] },
    { kind: "glob", name: "**/* over 100k files, limit 5000", calls: [call("glob", { pattern: "**/*", cwd: f.wide, limit: 5000 })] },
    { kind: "list_dir", name: "100k-entry folder", calls: [call("list_dir", { dir: f.wide })] },
    { kind: "list_dir", name: "tree, recursive", calls: [call("list_dir", { dir: f.tree, recursive: true })] },
    { kind: "write_file", name: "32 MB content", calls: [call("write_file", { file: "written.txt", content: big(32, "write me\n") })] },
    {
      kind: "edit_file",
      name: "64 MB file, old_string not found",
      calls: [call("read_file", { file: workspaceCopy("miss.txt"), limit: 1 }), call("edit_file", { file: workspaceCopy("miss.txt"), old_string: "not\nin the\nfile", new_string: "x" })],
    },
    {
      kind: "edit_file",
      name: "64 MB file, one replacement",
      calls: [call("read_file", { file: workspaceCopy("hit.txt"), limit: 1 }), call("edit_file", { file: workspaceCopy("hit.txt"), old_string: "line 0001000 ", new_string: "LINE 1000 " })],
    },
    { kind: "bash", name: "prints 500 MB", calls: [call("bash", { command: "head -c 500000000 /dev/zero | tr '\\0' 'a'; echo" })] },
    {
      kind: "bash_output",
      name: "3 polls of a chatty background shell",
      calls: [
        call("bash", { command: "yes 'chatty background line'", run_in_background: true }),
        call("bash", { command: "sleep 1" }),
        poll,
        call("bash", { command: "sleep 1" }),
        poll,
        poll,
        (results) => ({ name: "kill_shell", args: { shell_id: shellIdOf(results) } }),
      ],
    },
    { kind: "web_fetch", name: "10 MB HTML page, text mode", calls: [call("web_fetch", { url: f.pageUrl })] },
    { kind: "web_fetch", name: "10 MB HTML page, page 5", calls: [call("web_fetch", { url: f.pageUrl }), call("web_fetch", { url: f.pageUrl, page: 5 })] },
    { kind: "web_fetch", name: "9 MB JSON, json mode", calls: [call("web_fetch", { url: f.jsonUrl, mode: "json" })] },
    {
      kind: "memory",
      name: "5 × 4 MB memory_write, then search and read",
      calls: [
        ...[1, 2, 3, 4, 5].map((n) => call("memory_write", { content: big(4, `entry ${n} remembers alpha beta gamma delta\n`) })),
        call("memory_search", { query: "gamma remembers" }),
        call("memory_read", {}),
      ],
    },
    {
      kind: "todo_write",
      name: "200 items of 100 KB",
      calls: [call("todo_write", { todos: Array.from({ length: 200 }, (_, i) => ({ id: String(i), content: big(0.1, "todo "), status: "pending", priority: "low" })) })],
    },
  ];
}

/** bash_output of the background shell the turn's first call started. */
const poll: Call = (results) => ({ name: "bash_output", args: { shell_id: shellIdOf(results) } });
function shellIdOf(results: string[]): string {
  return /"shell_id":"(bg_[0-9a-f]+)"/.exec(results[0] ?? "")?.[1] ?? "bg_missing";
}

/** The scripted model: the user message names the case; each tool result moves to its next call. */
async function startAdversarialLlm(byId: Map<string, Case>): Promise<FakeLlm> {
  const llm = await startFakeLlm();
  llm.respond((req: FakeRequest) => {
    const messages: { role: string; content?: unknown }[] = req.body?.messages ?? [];
    const results: string[] = [];
    let last = messages.length - 1;
    for (; last >= 0 && messages[last]!.role !== "user"; last--) if (messages[last]!.role === "tool") results.unshift(String(messages[last]!.content ?? ""));
    const id = /case:(\d+)/.exec(JSON.stringify(messages[last]?.content ?? ""))?.[1];
    const script = id === undefined ? undefined : byId.get(id);
    if (!script || results.length >= script.calls.length) return reply().text("done").stop();
    const next = script.calls[results.length]!(results);
    const args = JSON.stringify(next.args);
    // Big arguments arrive as many small fragments, as providers stream them.
    return reply().rawToolCall(next.name, args, { fragments: Math.max(3, Math.ceil(args.length / 16_384)) }).stop();
  });
  return llm;
}

async function makeFixtures(): Promise<Fixtures & { close(): Promise<void> }> {
  const root = mkdtempSync(join(tmpdir(), "veil-bench-adversarial-"));
  const lines = join(root, "lines.txt");
  writeChunked(lines, 64 * MB, (i) => `line ${String(i).padStart(7, "0")} some text\n`);
  const shortLines = join(root, "short-lines.txt");
  writeFileSync(shortLines, "a\n".repeat((7.5 * MB) / 2));
  const oneLine = join(root, "one-line.txt");
  writeChunked(oneLine, 64 * MB, () => "a".repeat(1024));
  const sparse = join(root, "sparse.txt");
  writeFileSync(sparse, "some text\n".repeat(820));
  const fd = openSync(sparse, "r+");
  ftruncateSync(fd, 1024 * MB);
  closeSync(fd);
  const tree = join(root, "tree");
  const body = Array.from({ length: 100 }, (_, i) => `line ${i} of a file in a wide tree\n`).join("");
  for (let a = 0; a < 10; a++) {
    for (let b = 0; b < 10; b++) {
      for (let c = 0; c < 10; c++) {
        const dir = join(tree, `a${a}`, `b${b}`, `c${c}`);
        mkdirSync(dir, { recursive: true });
        for (let n = 0; n < 10; n++) writeFileSync(join(dir, `f${n}.txt`), body);
      }
    }
  }
  let deep = join(tree, "deep");
  for (let d = 0; d < 200; d++) deep = join(deep, `d${d}`);
  mkdirSync(deep, { recursive: true });
  writeFileSync(join(deep, "bottom.txt"), body);
  const wide = join(root, "wide");
  mkdirSync(wide);
  for (let n = 0; n < 100_000; n++) writeFileSync(join(wide, `file-${String(n).padStart(6, "0")}.txt`), "");

  const page = Buffer.from(`<!doctype html><html><head><title>big</title></head><body>${"<div><p>some <b>words</b> in a <a href='/x'>page</a></p></div>\n".repeat(150_000)}</body></html>`);
  const json = Buffer.from(JSON.stringify(Array.from({ length: 120_000 }, (_, i) => ({ id: i, name: `item ${i}`, tags: ["a", "b", "c"], nested: { ok: true } }))));
  const server: Server = createServer((req, res) => {
    const isJson = req.url === "/big.json";
    res.writeHead(200, { "content-type": isJson ? "application/json" : "text/html; charset=utf-8", "content-length": String((isJson ? json : page).length) });
    res.end(isJson ? json : page);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    root,
    lines,
    shortLines,
    oneLine,
    sparse,
    tree,
    wide,
    pageUrl: `http://127.0.0.1:${port}/page.html`,
    jsonUrl: `http://127.0.0.1:${port}/big.json`,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(root, { recursive: true, force: true });
    },
  };
}

function writeChunked(path: string, bytes: number, piece: (i: number) => string): void {
  const fd = openSync(path, "w");
  let written = 0;
  let i = 0;
  let batch = "";
  while (written + batch.length < bytes) {
    batch += piece(i++);
    if (batch.length >= MB) {
      writeSync(fd, batch);
      written += batch.length;
      batch = "";
    }
  }
  writeSync(fd, batch.slice(0, bytes - written));
  closeSync(fd);
}

interface Measured {
  peak: number;
  helperPeak: number;
  answerChars: number[];
  failed?: string;
}

/** One case in its own session: peak RSS from the kernel's high-water mark (sampled as well, where it cannot be reset). */
async function measureCase(server: BenchServer, id: number): Promise<Measured> {
  const session = await createSession(server);
  const exact = server.resetPeakRss();
  let sampled = server.rssBytes();
  let helperSampled = server.helperRssBytes();
  const sampler = setInterval(() => {
    sampled = Math.max(sampled, server.rssBytes());
    helperSampled = Math.max(helperSampled, server.helperRssBytes());
  }, 20);
  let failed: string | undefined;
  try {
    const res = await server.fetch(`/sessions/${session}/chat`, { method: "POST", body: JSON.stringify({ message: `case:${id}` }) });
    const body = (await res.json()) as { error?: { code: string; message: string } };
    if (!res.ok) failed = `HTTP ${res.status} ${body.error?.code ?? ""}`;
  } catch (error) {
    // A refused connection may come before the exit is seen.
    await Promise.race([server.whenExited(), new Promise((resolve) => setTimeout(resolve, 2000))]);
    failed = server.exited() ? "SERVER CRASHED" : `request failed: ${(error as Error).message.split("\n")[0]}`;
  } finally {
    clearInterval(sampler);
  }
  if (server.exited()) return { peak: sampled, helperPeak: helperSampled, answerChars: [], failed };
  const peaks = exact ? server.peakRssBytes() : { server: sampled, helper: helperSampled };
  const messages = (await (await server.fetch(`/sessions/${session}/messages`)).json()) as { role: string; content: unknown }[];
  const answerChars = messages.filter((m) => m.role === "tool").map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)).length);
  await server.fetch(`/sessions/${session}`, { method: "DELETE" });
  return { peak: Math.max(peaks.server, sampled), helperPeak: Math.max(peaks.helper, helperSampled), answerChars, failed };
}

async function toolCases(fixtures: Fixtures): Promise<BenchResult[]> {
  let workspace = "";
  const all = cases(fixtures, (name) => join(workspace, name));
  const byId = new Map(all.map((c, i) => [String(i), c]));
  const llm = await startAdversarialLlm(byId);
  const results: BenchResult[] = [];
  /** A fresh server (again after a crash), its idle RSS measured after one plain turn has loaded its code. */
  const start = async (kind: string) => {
    const server = await startBenchServer({ llm, name: `adversarial-${kind}`, settings: { webFetch: { allowHosts: ["127.0.0.1"] } } });
    workspace = server.workspace;
    if (kind === "edit_file") for (const name of ["miss.txt", "hit.txt"]) copyFileSync(fixtures.lines, join(workspace, name));
    const warm = await createSession(server);
    await server.fetch(`/sessions/${warm}/chat`, { method: "POST", body: JSON.stringify({ message: "hello" }) });
    return { server, idle: server.rssBytes() };
  };
  try {
    for (const kind of [...new Set(all.map((c) => c.kind))]) {
      let { server, idle } = await start(kind);
      let kindPeak = 0;
      let helperPeak = 0;
      const notes: string[] = [];
      try {
        for (const [i, c] of all.entries()) {
          if (c.kind !== kind) continue;
          if (server.exited()) {
            await server.stop();
            ({ server, idle } = await start(kind));
          }
          const m = await measureCase(server, i);
          kindPeak = Math.max(kindPeak, m.peak);
          helperPeak = Math.max(helperPeak, m.helperPeak);
          notes.push(`${c.name}: ${mb(m.peak)} MB, answer ${m.answerChars.join("+") || "none"} chars${m.failed ? `, ${m.failed}` : ""}`);
        }
      } finally {
        await server.stop();
      }
      results.push(
        withBaseline({
          name: `peak server RSS, ${kind}`,
          value: kindPeak / MB,
          unit: "MB",
          baseline: { name: "idle server", value: idle / MB },
          note: `${notes.join("; ")}${helperPeak ? `; spawn helper peak ${mb(helperPeak)} MB` : ""}`,
        }),
      );
    }
  } finally {
    await llm.close();
  }
  return results;
}

/** One fuzzed request: garbage and oversized bodies, unknown ids and routes, real sessions and chats, SSE clients that drop. */
async function fuzzRequest(server: BenchServer, n: number, sessions: string[], random: () => number): Promise<void> {
  const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)]!;
  const session = sessions.length ? pick(sessions) : "ses_missing";
  const garbage = () => Buffer.from(Array.from({ length: 1 + Math.floor(random() * 4096) }, () => Math.floor(random() * 256))).toString("latin1");
  const raw = (path: string, init: RequestInit) =>
    fetch(`${server.url}${path}`, { ...init, headers: { authorization: `Bearer ${server.secret}`, "content-type": "application/json", ...(init.headers ?? {}) } })
      .then((res) => res.arrayBuffer())
      .catch(() => undefined);
  switch (n % 12) {
    case 0: {
      const body = await raw("/sessions", { method: "POST", body: JSON.stringify({ agent: "default" }) });
      const id = body ? (JSON.parse(Buffer.from(body).toString("utf8")) as { id?: string }).id : undefined;
      if (id) sessions.push(id);
      if (sessions.length > 400) await raw(`/sessions/${sessions.shift()}`, { method: "DELETE" });
      return;
    }
    case 1:
      await raw("/sessions", { method: "POST", body: garbage() });
      return;
    case 2:
      await raw(`/sessions/${session}/chat`, { method: "POST", body: `{"message":"${"x".repeat(Math.floor(random() * 200_000))}` });
      return;
    case 3:
      // Over the 10 MB body limit every 50th time; otherwise a big valid-looking body.
      await raw(`/sessions/${session}/chat`, { method: "POST", body: n % 50 === 3 ? "x".repeat(11 * MB) : JSON.stringify({ message: "y".repeat(Math.floor(random() * 500_000)), extra: true }) });
      return;
    case 4:
      await raw(`/sessions/${session}/chat`, { method: "POST", body: JSON.stringify({ message: `fuzz ${n}` }) });
      return;
    case 5:
      await raw(`/sessions/ses_${Math.floor(random() * 1e9)}/messages?after=-1&limit=abc`, { method: "GET" });
      return;
    case 6:
      await raw(`/${garbage().replace(/[^a-z/]/gi, "")}`, { method: pick(["GET", "POST", "PUT", "DELETE", "PATCH"]) });
      return;
    case 7:
    case 8: {
      // An SSE client that connects, reads a little, and drops.
      const abort = new AbortController();
      const path = n % 12 === 7 ? "/events" : `/sessions/${session}/events?after=0`;
      const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${server.secret}`, accept: "text/event-stream" }, signal: abort.signal }).catch(() => undefined);
      const reader = res?.body?.getReader();
      await reader?.read().catch(() => undefined);
      abort.abort();
      return;
    }
    case 9:
      await raw(`/sessions/${session}`, { method: "GET" });
      return;
    case 10:
      await raw("/sessions", { method: "POST", body: JSON.stringify({ agent: garbage().slice(0, 40), budget_override: { max_tokens: -1 }, mode: 7 }) });
      return;
    default:
      await raw(`/sessions?status=${pick(["idle", "nope", "closed", ""])}`, { method: "GET" });
  }
}

/**
 * With VEIL_BENCH_SNAPSHOT_DIR=DIR the fuzzed server runs with --heapsnapshot-signal and writes
 * a heap snapshot (live objects, after a full GC) to DIR when idle and after the fuzz.
 */
const SNAPSHOT_DIR = process.env.VEIL_BENCH_SNAPSHOT_DIR;

async function snapshot(server: BenchServer): Promise<void> {
  if (!SNAPSHOT_DIR) return;
  const before = new Set(readdirSync(SNAPSHOT_DIR));
  process.kill(server.pid, "SIGUSR2");
  // Written once its size stops changing.
  for (let last = -1; ; ) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const file = readdirSync(SNAPSHOT_DIR).find((name) => !before.has(name) && name.endsWith(".heapsnapshot"));
    const size = file ? statSync(join(SNAPSHOT_DIR, file)).size : -1;
    if (file && size > 0 && size === last) return;
    last = size;
  }
}

async function httpFuzz(): Promise<BenchResult[]> {
  const llm = await startFakeLlm();
  llm.respond(() => reply().text("ok").stop());
  if (SNAPSHOT_DIR) process.env.VEIL_BENCH_NODE_ARGS = `${process.env.VEIL_BENCH_NODE_ARGS ?? ""} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${SNAPSHOT_DIR}`;
  const server = await startBenchServer({ llm, name: "adversarial-http", settings: { limits: { maxLiveSessions: 1000 } } });
  try {
    const warm = await createSession(server);
    await server.fetch(`/sessions/${warm}/chat`, { method: "POST", body: JSON.stringify({ message: "hello" }) });
    const idle = server.rssBytes();
    await snapshot(server);
    server.resetPeakRss();
    let seed = 42;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const sessions: string[] = [];
    const marks: string[] = [];
    const concurrency = 8;
    for (let done = 0; done < HTTP_FUZZ_REQUESTS; done += concurrency) {
      await Promise.all(Array.from({ length: concurrency }, (_, k) => fuzzRequest(server, done + k, sessions, random)));
      if ((done + concurrency) % 1000 < concurrency) marks.push(`${mb(server.rssBytes())}`);
    }
    const after = server.rssBytes();
    const peak = server.peakRssBytes().server;
    await snapshot(server);
    return [
      withBaseline({
        name: `server RSS after ${HTTP_FUZZ_REQUESTS} fuzzed HTTP requests`,
        value: after / MB,
        unit: "MB",
        baseline: { name: "idle server", value: idle / MB },
        note: `every 1000 requests: ${marks.join(", ")} MB; peak ${mb(peak)} MB`,
      }),
    ];
  } finally {
    await server.stop();
    await llm.close();
  }
}

/** VEIL_BENCH_ADVERSARIAL=tools or =http runs one half. */
export async function run(): Promise<BenchResult[]> {
  const only = process.env.VEIL_BENCH_ADVERSARIAL;
  const results: BenchResult[] = [];
  if (only !== "http") {
    const fixtures = await makeFixtures();
    try {
      results.push(...(await toolCases(fixtures)));
    } finally {
      await fixtures.close();
    }
  }
  if (only !== "tools") results.push(...(await httpFuzz()));
  return results;
}

/**
 * Compaction wired into the product: the real runtime, a real SQLite file,
 * real tools, the fake LLM over HTTP, and the HTTP API where the contract names it.
 */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { SUMMARY_SYSTEM_PROMPT } from "../../../src/core/compaction/index.js";
import type { VeilEvent } from "../../../src/base/events.js";
import { createRuntimeHarness, type RuntimeHarness } from "../../helpers/runtime.js";
import { promptTokensOf, reply, startFakeLlm, type FakeRequest } from "../../helpers/fake-llm.js";
import { textOf } from "../../helpers/history.js";
import { tmpWorkspace } from "../../helpers/workspace.js";
import { runOnce } from "../../../src/cli/run.js";

let h: RuntimeHarness;
afterEach(async () => h?.close());

const REQUEST = "Read the project's files one by one and report what each does.";
const FILES = 20;

function projectFiles(tokensEach: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) files[`src/file${i}.ts`] = textOf(tokensEach, `// file${i}`);
  return files;
}

const isSummaryRequest = (req: FakeRequest) => req.body.messages[0]?.content === SUMMARY_SYSTEM_PROMPT;
const modelRequests = (): FakeRequest[] => h.llm.completionRequests.filter((r) => !isSummaryRequest(r));

/** The fake model: reads file N % FILES for N < calls, then answers; writes a template summary when asked. */
function scriptReader(calls: number): { asked: () => number } {
  let asked = 0;
  h.llm.respond((req) => {
    if (isSummaryRequest(req)) {
      expect(req.body.tools).toBeUndefined();
      return reply().text(`## Goal\n${REQUEST}\n## Decisions and why\nRead in order.\n## Files read and changed\nsrc/file0.ts … (read)\n## Current state\n${asked} read.\n## Open questions\nNone\n## Next steps\n1. Keep reading.`).stop();
    }
    if (asked < calls) return reply().tool("read_file", { file: `src/file${asked++ % FILES}.ts` }).stop();
    return reply().text(`Read ${asked} files.`).stop();
  });
  return { asked: () => asked };
}

/** A wire request is valid: system first, every tool_call answered right after it, the user's request kept. */
function expectValid(req: FakeRequest, lastUserRequest = REQUEST): void {
  const messages = req.body.messages as any[];
  expect(messages[0].role).toBe("system");
  expect(messages.some((m) => m.role === "user" && m.content === lastUserRequest)).toBe(true);
  let open: string[] = [];
  for (const m of messages) {
    if (m.role === "tool") {
      expect(open).toContain(m.tool_call_id);
      open = open.filter((id) => id !== m.tool_call_id);
      continue;
    }
    expect(open).toEqual([]);
    open = m.role === "assistant" ? (m.tool_calls ?? []).map((c: any) => c.id) : [];
  }
  expect(open).toEqual([]);
}

const compactions = (sessionId: string) => h.events.filter((e): e is Extract<VeilEvent, { type: "session.compacted" }> => e.sessionId === sessionId && e.type === "session.compacted");

describe("auto-compaction in a real session", () => {
  it("carries 200 tool calls with large outputs through a 16k window: every request fits, stays valid and keeps the request", async () => {
    const llm = await startFakeLlm({ contextLimit: 16_000 });
    h = await createRuntimeHarness({ llm, files: projectFiles(1500), models: { "fake-model": { context_window: 16_000 } }, settings: { budget: { max_iterations: 400 } } });
    scriptReader(200);
    const session = await h.runtime.sessions.create({ agent: "default" });
    const result = await (await h.runtime.sessions.send(session.id, REQUEST)).result;

    expect(result.error).toBeUndefined();
    expect(result.content).toBe("Read 200 files.");
    expect(llm.overflowed).toHaveLength(0);
    const requests = modelRequests();
    expect(requests).toHaveLength(201);
    for (const req of requests) {
      expectValid(req);
      expect(promptTokensOf(req.body)).toBeLessThan(16_000);
    }
    const events = compactions(session.id);
    expect(events.length).toBeGreaterThan(5);
    expect(events.every((e) => e.reason === "auto" && e.tokensAfter < e.tokensBefore)).toBe(true);
    expect(events.some((e) => e.summaryMessageId !== null)).toBe(true);

    // The request right after a compaction is smaller than the one before it.
    const seqOf = (e: VeilEvent) => h.events.indexOf(e);
    const first = events[0]!;
    const before = h.events.filter((e) => e.sessionId === session.id && e.type === "chat.message" && e.role === "assistant" && seqOf(e) < seqOf(first)).length;
    expect(promptTokensOf(requests[before]!.body)).toBeLessThan(promptTokensOf(requests[before - 1]!.body));

    // History stays whole: every row is still stored, flagged; the summaries are rows of kind "summary".
    const server = await h.serve();
    const rows = (await (await server.fetch(`/sessions/${session.id}/messages?limit=100000`)).json()) as any[];
    expect(rows.filter((r) => r.role === "tool")).toHaveLength(200);
    expect(rows.filter((r) => r.role === "assistant")).toHaveLength(201);
    expect(rows.some((r) => r.compacted === true)).toBe(true);
    expect(rows.filter((r) => r.kind === "summary").map((r) => r.id)).toEqual(events.map((e) => e.summaryMessageId).filter((id) => id !== null));
    expect(rows.every((r) => typeof r.compacted === "boolean" && "kind" in r)).toBe(true);
    const summaryRequest = requests.find((r) => (r.body.messages[1]?.content ?? "").startsWith("<summary>"));
    expect(summaryRequest).toBeDefined();
  }, 120_000);
});

describe("overflow recovery", () => {
  it("a provider's 'context length exceeded' compacts and retries once; the retry is smaller and the turn completes", async () => {
    // models.json says 64k, the server holds 8k: auto-compaction comes too late, the provider refuses first.
    const llm = await startFakeLlm({ contextLimit: 8_000 });
    h = await createRuntimeHarness({ llm, files: projectFiles(1500), models: { "fake-model": { context_window: 64_000 } } });
    scriptReader(12);
    const session = await h.runtime.sessions.create({ agent: "default" });
    const result = await (await h.runtime.sessions.send(session.id, REQUEST)).result;

    expect(result.error).toBeUndefined();
    expect(result.content).toBe("Read 12 files.");
    expect(llm.overflowed.length).toBeGreaterThan(0);
    const refused = llm.overflowed[0]!;
    const retry = modelRequests()[modelRequests().indexOf(refused) + 1]!;
    expect(promptTokensOf(retry.body)).toBeLessThan(8_000);
    expect(promptTokensOf(retry.body)).toBeLessThan(promptTokensOf(refused.body));
    expectValid(retry);
    expect(compactions(session.id).map((e) => e.reason)).toContain("overflow");
  });

  it("fails the turn with CONTEXT_OVERFLOW (HTTP 400) naming window and size after exactly one retry", async () => {
    const llm = await startFakeLlm({ contextLimit: 10 });
    h = await createRuntimeHarness({ llm, models: { "fake-model": { context_window: 16_000 } } });
    h.llm.respond(() => reply().text("never").stop());
    const server = await h.serve();
    const session = (await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json()) as { id: string };
    const response = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "hello" }) });
    expect(response.status).toBe(400);
    const body = (await response.json()) as any;
    expect(body.error.code).toBe("CONTEXT_OVERFLOW");
    expect(body.error.message).toMatch(/context window of fake-model \(10 tokens\): the prompt is \d+ tokens/);
    expect(h.llm.completionRequests).toHaveLength(2);
    const done = h.events.find((e) => e.sessionId === session.id && e.type === "chat.done") as Extract<VeilEvent, { type: "chat.done" }>;
    expect(done.error?.code).toBe("CONTEXT_OVERFLOW");
  });
});

describe("manual compaction: POST /sessions/:id/compact", () => {
  it("compacts an idle session, both stages; the next request is smaller, valid, and keeps the last user request", async () => {
    h = await createRuntimeHarness({ files: projectFiles(800) });
    scriptReader(6);
    const server = await h.serve();
    const session = (await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json()) as { id: string };
    expect((await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: REQUEST }) })).status).toBe(200);
    const lastBefore = modelRequests().at(-1)!;

    const response = await server.fetch(`/sessions/${session.id}/compact`, { method: "POST" });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { tokensBefore: number; tokensAfter: number; summaryMessageId: string };
    expect(answer.tokensAfter).toBeLessThan(answer.tokensBefore);
    expect(answer.tokensAfter).toBeGreaterThan(0);
    const [event] = compactions(session.id);
    expect(event).toMatchObject({ reason: "manual", tokensBefore: answer.tokensBefore, tokensAfter: answer.tokensAfter, summaryMessageId: answer.summaryMessageId });
    expect(answer.summaryMessageId).toMatch(/^msg_/);
    const sessionRow = (await (await server.fetch(`/sessions/${session.id}`)).json()) as { context_size: number };
    expect(sessionRow.context_size).toBe(answer.tokensAfter);

    const rows = (await (await server.fetch(`/sessions/${session.id}/messages`)).json()) as any[];
    expect(rows.find((r) => r.id === answer.summaryMessageId)).toMatchObject({ kind: "summary", compacted: false });
    expect(rows.filter((r) => r.compacted).length).toBeGreaterThan(0);
    expect(rows.find((r) => r.role === "user" && r.content === REQUEST).compacted).toBe(false);

    h.llm.respond(() => reply().text("Next.").stop());
    await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "and now?" }) });
    const next = modelRequests().at(-1)!;
    expectValid(next, "and now?");
    expect(next.body.messages.some((m: any) => m.role === "user" && m.content === REQUEST)).toBe(true);
    expect(next.body.messages[1].content).toMatch(/^<summary>[\s\S]*## Goal/);
    expect(promptTokensOf(next.body)).toBeLessThan(promptTokensOf(lastBefore.body) / 2);
  });

  it("on a running session compacts at the next boundary; a message injected meanwhile still arrives", async () => {
    h = await createRuntimeHarness({ files: projectFiles(800) });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    h.llm.respond((req) => {
      if (isSummaryRequest(req)) return reply().text("## Goal\nRead files.\n## Next steps\n1. Wait.").stop();
      calls++;
      if (calls <= 4) return reply().tool("read_file", { file: `src/file${calls}.ts` }).stop();
      // The fifth call streams until the test lets it go: the run is between boundaries meanwhile.
      if (calls === 5) return reply().waitFor(gate).tool("read_file", { file: "src/file5.ts" }).stop();
      return reply().text("done").stop();
    });
    const server = await h.serve();
    const session = await h.runtime.sessions.create({ agent: "default" });
    const receipt = await h.runtime.sessions.send(session.id, REQUEST);
    await h.llm.waitForRequests(5);
    // The request is let go only once the server has taken it in (it travels over a socket, and
    // the boundary after the fifth call may otherwise come first: then it is the next one's).
    const live = (h.runtime.sessions as unknown as { live: Map<string, { context: { requestCompaction(): Promise<unknown> } }> }).live.get(session.id)!;
    const takenIn = new Promise<void>((resolve) => {
      const request = live.context.requestCompaction.bind(live.context);
      live.context.requestCompaction = () => {
        resolve();
        return request();
      };
    });
    const compacting = server.fetch(`/sessions/${session.id}/compact`, { method: "POST" });
    await takenIn;
    await h.runtime.sessions.send(session.id, "also note the date");
    expect(compactions(session.id)).toHaveLength(0);
    release();
    const answer = (await (await compacting).json()) as { tokensBefore: number; tokensAfter: number };
    expect(answer.tokensAfter).toBeLessThan(answer.tokensBefore);
    const result = await receipt.result;
    expect(result.content).toBe("done");
    const after = modelRequests()[5]!;
    expect(after.body.messages[1].content).toMatch(/^<summary>/);
    expectValid(after, "also note the date");
    // The boundary delivered the injected message after the compaction; the summarizer saw the newest tool result.
    expect(after.body.messages.at(-1)).toMatchObject({ role: "user", content: "also note the date" });
    const summarizer = h.llm.completionRequests.filter(isSummaryRequest);
    expect(summarizer).toHaveLength(1);
    expect(summarizer[0]!.body.messages[1].content).toContain("// file5");
    expect(compactions(session.id).map((e) => e.reason)).toEqual(["manual"]);
  });

  it("answers 409 on a closed session and 404 on an unknown one", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const session = (await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json()) as { id: string };
    await server.fetch(`/sessions/${session.id}`, { method: "DELETE" });
    const closed = await server.fetch(`/sessions/${session.id}/compact`, { method: "POST" });
    expect(closed.status).toBe(409);
    expect(((await closed.json()) as any).error.code).toBe("SESSION_CLOSED");
    expect((await server.fetch(`/sessions/nope/compact`, { method: "POST" })).status).toBe(404);
  });
});

describe("after a compaction", () => {
  it("the must-have-read gate starts afresh: editing a file read before needs a new read_file", async () => {
    h = await createRuntimeHarness({ files: { ...projectFiles(800), "notes.txt": "alpha\n" } });
    const script = [
      reply().tool("read_file", { file: "notes.txt" }).stop(),
      ...[1, 2, 3, 4].map((i) => reply().tool("read_file", { file: `src/file${i}.ts` }).stop()),
      reply().text("read them").stop(),
    ];
    h.llm.enqueue(...script);
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "read notes and files")).result;
    expect(await h.runtime.store.hasRead(session.id, `${h.ws.root}/notes.txt`)).toBe(true);

    h.llm.respond((req) => (isSummaryRequest(req) ? reply().text("## Goal\nEdit notes.").stop() : reply().text("?").stop()));
    await h.runtime.sessions.compact(session.id);
    h.llm.respond(null);
    h.llm.enqueue(
      reply().tool("edit_file", { file: "notes.txt", old_string: "alpha", new_string: "beta" }).stop(),
      reply().tool("read_file", { file: "notes.txt" }).stop(),
      reply().tool("edit_file", { file: "notes.txt", old_string: "alpha", new_string: "beta" }).stop(),
      reply().text("edited").stop(),
    );
    await (await h.runtime.sessions.send(session.id, "now change alpha to beta")).result;
    const ends = h.events.filter((e): e is Extract<VeilEvent, { type: "tool.end" }> => e.sessionId === session.id && e.type === "tool.end" && e.toolName === "edit_file");
    expect(ends).toHaveLength(2);
    expect(ends[0]!.success).toBe(false);
    expect(ends[0]!.output).toMatch(/FILE_NOT_READ/);
    expect(ends[1]!.success).toBe(true);
    expect(readFileSync(h.ws.path("notes.txt"), "utf8")).toBe("beta\n");
  });
});

describe("the model's view rebuilt from rows", () => {
  it("still sends an image a tool returned in this run (attachments are never stored)", async () => {
    const png = Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4cd0000000049454e44ae426082", "hex");
    h = await createRuntimeHarness({ files: { "photo.png": png }, models: { "fake-model": { input_modalities: ["text", "image"] } } });
    h.llm.enqueue(reply().tool("read_file", { file: "photo.png" }).stop(), reply().text("a pixel").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "look")).result;
    const messages = h.llm.completionRequests[1]!.body.messages as any[];
    expect(messages.find((m) => m.role === "tool").content).toMatch(/1 attachment\(s\) follow in the next user message/);
    expect(JSON.stringify(messages.at(-1))).toContain(png.toString("base64"));
    const stored = (await h.runtime.store.listMessages(session.id)).find((r) => r.role === "tool")!;
    expect(stored.content).toMatch(/^Image file: photo\.png/);
  });
});

describe("cost end to end", () => {
  it("prices every call at models.json cost: chat.done carries the turn's cost_usd, the session row the total", async () => {
    const cost = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };
    h = await createRuntimeHarness({ models: { "fake-model": { context_window: 100_000, cost } } });
    const usage = { prompt_tokens: 10_000, completion_tokens: 500, cached_tokens: 6_000, cache_write_tokens: 1_000 };
    h.llm.enqueue(reply().tool("log_write", { message: "x" }).usage(usage).stop(), reply().text("ok").usage(usage).stop(), reply().text("again").usage(usage).stop());
    const perCall = ((10_000 - 6_000 - 1_000) * 3 + 6_000 * 0.3 + 1_000 * 3.75 + 500 * 15) / 1e6;
    const server = await h.serve();
    const session = (await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json()) as { id: string };
    await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "go" }) });
    await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "again" }) });
    const done = h.events.filter((e): e is Extract<VeilEvent, { type: "chat.done" }> => e.sessionId === session.id && e.type === "chat.done");
    expect(done.map((e) => e.cost_usd)).toHaveLength(2);
    expect(done[0]!.cost_usd).toBeCloseTo(2 * perCall, 12);
    expect(done[1]!.cost_usd).toBeCloseTo(perCall, 12);
    const row = (await (await server.fetch(`/sessions/${session.id}`)).json()) as { cost_usd: number };
    expect(row.cost_usd).toBeCloseTo(3 * perCall, 12);
  });

  it("veil run --json ends its turn with a chat.done carrying cost_usd", async () => {
    const llm = await startFakeLlm();
    const ws = tmpWorkspace({ files: { ".veil/models.json": JSON.stringify({ "fake-model": { cost: { input: 2, output: 10 } } }), ".veil-home/.keep": "" } });
    try {
      llm.enqueue(reply().text("hi").usage({ prompt_tokens: 1_000, completion_tokens: 100 }).stop());
      const out: string[] = [];
      const env = { VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk", VEIL_MODEL: "fake-model", VEIL_HOME: ws.path(".veil-home") };
      const code = await runOnce({ workspace: ws.root, agent: "default", json: true, prompt: "hello" }, { stdout: (t) => out.push(t), stderr: () => {}, env });
      expect(code).toBe(0);
      const events = out.join("").trim().split("\n").map((line) => JSON.parse(line));
      const done = events.filter((e) => e.type === "chat.done");
      expect(done).toHaveLength(1);
      expect(done[0].cost_usd).toBeCloseTo((1_000 * 2 + 100 * 10) / 1e6, 12);
    } finally {
      await llm.close();
      ws.cleanup();
    }
  });

  it("a model with no price sends no cost_usd", async () => {
    h = await createRuntimeHarness();
    h.llm.enqueue(reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const result = await (await h.runtime.sessions.send(session.id, "hi")).result;
    expect(result.costUsd).toBeUndefined();
    const done = h.events.find((e) => e.sessionId === session.id && e.type === "chat.done")!;
    expect("cost_usd" in done).toBe(false);
  });
});

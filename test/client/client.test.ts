import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { VeilApiError, VeilClient, type VeilEvent } from "../../src/client/index.js";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { spawnVeil, veilBuilt, type Spawned } from "../helpers/cli.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const SECRET = "client-test-secret";

/** `veil serve --port 0` spawned from the build, with the fake LLM as its provider. */
async function startVeilServe(ws: TempWorkspace, llm: FakeLlm): Promise<{ url: string; stop(): Promise<Spawned> }> {
  let stopServer = () => {};
  let announce!: (url: string) => void;
  const listening = new Promise<string>((resolve) => (announce = resolve));
  const exited = spawnVeil(["serve", "--port", "0", "--secret", SECRET], {
    cwd: ws.root,
    env: { ...process.env, VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk", VEIL_MODEL: "fake-model", VEIL_HOME: join(ws.root, "home"), VEIL_SECRET: undefined },
    onStdout: (text, kill) => {
      stopServer = kill;
      const match = /listening on (http:\/\/\S+)/.exec(text);
      if (match) announce(match[1]!);
    },
  });
  const url = await Promise.race([listening, exited.then((r) => Promise.reject(new Error(`veil serve exited: ${r.stderr}`)))]);
  return {
    url,
    stop: () => {
      stopServer();
      return exited;
    },
  };
}

/** A TCP proxy in front of the server whose connections can be cut and refused, to force reconnects. */
async function startProxy(port: number) {
  const sockets = new Set<Socket>();
  const requests: string[] = [];
  let down = false;
  const server: Server = createServer((client) => {
    if (down) return void client.destroy();
    const upstream = connect(port, "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => undefined);
    }
    // Host must name the server (DNS-rebinding guard), so the proxy rewrites it.
    client.on("data", (chunk: Buffer) => {
      const text = chunk.toString("latin1");
      requests.push(text);
      upstream.write(Buffer.from(text.replace(/^host: .*$/im, `host: 127.0.0.1:${port}`), "latin1"));
    });
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const proxyPort = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${proxyPort}`,
    requests,
    /** Drops every open connection and refuses new ones until up(). */
    down() {
      down = true;
      for (const s of sockets) s.destroy();
    },
    up() {
      down = false;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Collects events from an async iterator; `until` resolves when one matches. */
function collect(stream: AsyncIterable<VeilEvent>) {
  const events: VeilEvent[] = [];
  const waiters: { match: (e: VeilEvent) => boolean; resolve: () => void }[] = [];
  const done = (async () => {
    for await (const event of stream) {
      events.push(event);
      for (const w of [...waiters]) if (w.match(event)) (waiters.splice(waiters.indexOf(w), 1), w.resolve());
    }
  })();
  return {
    events,
    done,
    until: (match: (e: VeilEvent) => boolean) =>
      new Promise<void>((resolve) => (events.some(match) ? resolve() : waiters.push({ match, resolve }))),
  };
}

const ASK_TOOL = {
  ".veil/tools/ask_user/tool.json": JSON.stringify({
    name: "ask_user",
    description: "Ask the user a question in the UI.",
    input_schema: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
  }),
  ".veil/tools/ask_user/index.js": "'use strict';\nmodule.exports = async function execute({ question, _remoteMethodExecution }) {\n  return 'answer: ' + JSON.stringify(await _remoteMethodExecution({ method: 'ask_user', data: { question }, timeoutMs: 20000 }));\n};\n",
  ".veil/agents/asker/agent.json": JSON.stringify({ description: "asks", modes: { chat: { enabled: true, preActivatedTools: ["ask_user"] } } }),
};

describe.skipIf(!veilBuilt)("VeilClient against a spawned veil serve", () => {
  let ws: TempWorkspace;
  let llm: FakeLlm;
  let server: Awaited<ReturnType<typeof startVeilServe>>;
  let veil: VeilClient;

  beforeAll(async () => {
    ws = tmpWorkspace({ files: ASK_TOOL });
    mkdirSync(join(ws.root, "home"), { recursive: true });
    llm = await startFakeLlm();
    server = await startVeilServe(ws, llm);
    veil = new VeilClient({ baseUrl: `${server.url}/`, secret: SECRET });
  }, 30_000);

  afterAll(async () => {
    const exit = await server?.stop();
    expect(exit?.code).toBe(0);
    await llm?.close();
    ws?.cleanup();
  });

  it("sessions, sync chat, messages; errors are VeilApiError with the server's code", async () => {
    expect(await veil.health()).toMatchObject({ ok: true });
    expect((await veil.agents.list()).map((a) => a.name)).toEqual(expect.arrayContaining(["default", "asker"]));
    expect((await veil.tools()).some((t) => t.name === "bash")).toBe(true);
    const session = await veil.sessions.create({ agent: "default" });
    expect(session).toMatchObject({ agent: "default", status: "idle", parent_session_id: null });
    llm.enqueue(reply().text("hello there").stop());
    const answer = await veil.chat(session.id, "hi");
    expect(answer).toMatchObject({ content: "hello there", finishReason: "stop", stopReason: "stop" });
    const messages = await veil.sessions.messages(session.id);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "hi"],
      ["assistant", "hello there"],
    ]);
    expect((await veil.sessions.messages(session.id, { after: messages[0]!.seq })).map((m) => m.role)).toEqual(["assistant"]);
    expect((await veil.sessions.list()).some((s) => s.id === session.id)).toBe(true);
    expect(await veil.sessions.todos(session.id)).toEqual([]);
    const history = await veil.sessions.history(session.id);
    expect(history.map((e) => e.type)).toEqual(expect.arrayContaining(["chat.message", "chat.done"]));
    expect(history.every((e) => e.sessionId === session.id && typeof e.seq === "number")).toBe(true);
    const later = await veil.sessions.history(session.id, { after: history[0]!.seq, limit: 1 });
    expect(later).toEqual([history[1]]);

    const missing = await veil.sessions.get("sess_nope").catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(VeilApiError);
    expect(missing).toMatchObject({ status: 404, code: "SESSION_NOT_FOUND" });
    const wrong = await new VeilClient({ baseUrl: server.url, secret: "wrong" }).sessions.list().catch((e: unknown) => e);
    expect(wrong).toMatchObject({ status: 401, code: "UNAUTHORIZED" });
    llm.respond(() => reply().text("## Goal\nSay hi.").stop());
    const compacted = await veil.sessions.compact(session.id);
    expect(compacted.tokensAfter).toBeGreaterThan(0);
    expect((await veil.sessions.messages(session.id)).every((m) => typeof m.compacted === "boolean")).toBe(true);
    llm.respond(null);
    expect((await veil.sessions.close(session.id)).status).toBe("closed");
    expect(await veil.sessions.compact(session.id).catch((e: unknown) => e)).toMatchObject({ status: 409, code: "SESSION_CLOSED" });
  });

  it("titles, search, rename, and closing several sessions at once", async () => {
    const titled = await veil.sessions.create({ title: "Client-made title" });
    expect(titled).toMatchObject({ title: "Client-made title", origin: "api", ephemeral: false, context_window: 128_000 });
    const other = await veil.sessions.create();
    llm.enqueue(reply().text("ok").stop());
    await veil.chat(other.id, "Tidy the client examples");
    expect((await veil.sessions.get(other.id)).title).toBe("Tidy the client examples");
    expect((await veil.sessions.list({ q: "client-made" })).map((s) => s.id)).toEqual([titled.id]);
    expect((await veil.sessions.list({ limit: 1 }))[0]!.id).toBe(other.id);
    expect((await veil.sessions.list({ order: "created", q: "tidy the client" })).map((s) => s.id)).toEqual([other.id]);
    expect((await veil.sessions.rename(titled.id, "Renamed from the client")).title).toBe("Renamed from the client");
    const closed = await veil.sessions.closeMany([titled.id, other.id, "sess_unknown"]);
    expect(closed.closed.map((s) => [s.id, s.status])).toEqual([
      [titled.id, "closed"],
      [other.id, "closed"],
    ]);
    expect(closed.notFound).toEqual(["sess_unknown"]);
    expect(await veil.sessions.prune("30d")).toEqual({ closed: [], notFound: [] });
    expect(await veil.sessions.rename(titled.id, "   ").catch((e: unknown) => e)).toMatchObject({ status: 400, code: "VALIDATION_ERROR" });
  });

  it("chatStream yields the turn's typed events as they happen and ends with chat.done", async () => {
    const session = await veil.sessions.create();
    llm.enqueue(reply().thinking("let me see").tool("log_write", { message: "noted" }).stop(), reply().text("all ").text("done").stop());
    const events: VeilEvent[] = [];
    let text = "";
    for await (const event of veil.chatStream(session.id, "do it")) {
      events.push(event);
      if (event.type === "chat.chunk") text += event.content;
    }
    expect(text).toBe("all done");
    const types = events.map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(["thinking.chunk", "tool.start", "tool.end", "chat.chunk", "chat.done"]));
    expect(types.at(-1)).toBe("chat.done");
    const end = events.at(-1)!;
    if (end.type !== "chat.done") throw new Error("unreachable");
    expect(end.content).toBe("all done");
    expect(events.every((e) => e.sessionId === session.id)).toBe(true);
  });

  it("chat with output_schema: structured is the parsed answer (typed by chat<T>); a mismatch rejects with OUTPUT_SCHEMA_MISMATCH and keeps the last answer", async () => {
    const session = await veil.sessions.create();
    const output_schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };
    llm.enqueue(reply().text('{"city":"Lima"}').stop());
    const answer = await veil.chat<{ city: string }>(session.id, "capital of Peru?", { output_schema });
    const city: string | undefined = answer.structured?.city;
    expect(city).toBe("Lima");
    expect(answer.content).toBe('{"city":"Lima"}');

    for (const text of ["Lima.", '{"town":"Lima"}', '{"city":1}']) llm.enqueue(reply().text(text).stop());
    const failed = await veil.chat(session.id, "again?", { output_schema }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(VeilApiError);
    expect(failed).toMatchObject({ status: 502, code: "OUTPUT_SCHEMA_MISMATCH", body: { stopReason: "error", content: '{"city":1}' } });
  });

  it("events() reconnects by itself after the connection drops and replays what it missed with Last-Event-ID", async () => {
    const proxy = await startProxy(Number(new URL(server.url).port));
    const viaProxy = new VeilClient({ baseUrl: proxy.url, secret: SECRET });
    const session = await veil.sessions.create();
    const stop = new AbortController();
    // lastEventId 0: the whole session from its start, however late the connection is made.
    const seen = collect(viaProxy.events({ session: session.id, lastEventId: 0, signal: stop.signal, retryMs: 20, maxRetryMs: 100 }));

    llm.enqueue(reply().text("first").stop());
    await veil.chat(session.id, "one");
    await seen.until((e) => e.type === "chat.done");

    // The connection drops and stays down while a second turn runs.
    proxy.down();
    llm.enqueue(reply().text("second").stop());
    await veil.chat(session.id, "two");
    proxy.up();
    await seen.until((e) => e.type === "chat.done" && e.content === "second");

    const stored = seen.events.filter((e) => e.seq !== undefined && e.type !== "chat.chunk" && e.type !== "thinking.chunk");
    const seqs = stored.map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(seen.events.filter((e) => e.type === "chat.message" && e.role === "user").map((e) => (e as { content: string }).content)).toEqual(["one", "two"]);
    const connects = proxy.requests.filter((r) => r.startsWith(`GET /sessions/${session.id}/events`));
    expect(connects.length).toBeGreaterThanOrEqual(2);
    expect(connects[0]).toMatch(/last-event-id: 0\r\n/i);
    const resumedFrom = Number(/last-event-id: (\d+)/i.exec(connects.at(-1)!)![1]);
    expect(resumedFrom).toBe(stored.find((e) => e.type === "chat.done")!.seq);

    stop.abort();
    await seen.done;
    await proxy.close();
  });

  it("events() stops with VeilApiError when reconnecting cannot help (unknown session)", async () => {
    await expect(collect(veil.events({ session: "sess_nope" })).done).rejects.toMatchObject({ status: 404, code: "SESSION_NOT_FOUND" });
  });

  it("answers a tool's remote method: pending list, the stream's method.pending, answer(); a second answer is false", async () => {
    const session = await veil.sessions.create({ agent: "asker" });
    const stop = new AbortController();
    const methods = collect(veil.remoteMethods.stream(stop.signal));
    llm.enqueue(reply().tool("ask_user", { question: "Deploy?" }).stop(), reply().text("Deploying.").stop());
    const turn = veil.chat(session.id, "ship it");
    await methods.until((e) => e.type === "method.pending");
    const pending = methods.events.find((e) => e.type === "method.pending")!;
    if (pending.type !== "method.pending") throw new Error("unreachable");
    expect(pending).toMatchObject({ method: "ask_user", data: { question: "Deploy?" }, sessionId: session.id });
    expect(await veil.remoteMethods.pending()).toEqual([pending.id]);
    expect(await veil.remoteMethods.answer(pending.id, { answer: "yes" })).toBe(true);
    expect(await veil.remoteMethods.answer(pending.id, { answer: "again" })).toBe(false);
    expect((await turn).content).toBe("Deploying.");
    expect(llm.completionRequests.at(-1)!.body.messages.at(-1)).toMatchObject({ role: "tool", content: 'answer: {"answer":"yes"}' });
    stop.abort();
    await methods.done.catch(() => undefined);
  });

  it("memory and wake-ups", async () => {
    expect(await veil.memory.read("NOTES.md")).toBeNull();
    expect(await veil.memory.write("NOTES.md", "remember the milk\n")).toMatchObject({ ok: true });
    expect(await veil.memory.read("NOTES.md")).toBe("remember the milk\n");
    await veil.memory.write("MEMORY.md", "agent notes", { agent: "asker" });
    expect(await veil.memory.read("MEMORY.md", { agent: "asker" })).toBe("agent notes");

    const session = await veil.sessions.create();
    expect(await veil.wakeups.get(session.id)).toBeNull();
    const armed = await veil.wakeups.set(session.id, { time: "1h", message: "check the build" });
    expect(armed).toMatchObject({ message: "check the build" });
    expect(await veil.wakeups.get(session.id)).toMatchObject({ message: "check the build" });
    expect(await veil.wakeups.cancel(session.id)).toBe(true);
    expect(await veil.wakeups.get(session.id)).toBeNull();
  });

  it("schedules: create, list, runs, disable, delete; webhook deliveries", async () => {
    llm.respond(() => reply().text("scheduled answer").stop());
    try {
      const schedule = await veil.schedules.create({ agent: "default", prompt: "tick", everySeconds: 1 });
      expect(schedule).toMatchObject({ agent: "default", everySeconds: 1, cron: null, enabled: true, session: "new" });
      expect((await veil.schedules.list()).map((s) => s.id)).toContain(schedule.id);
      let runs = await veil.schedules.runs(schedule.id);
      while (runs.length === 0) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        runs = await veil.schedules.runs(schedule.id, { limit: 5 });
      }
      expect(runs[0]).toMatchObject({ at: schedule.nextRunAt, status: "ok", sessionId: expect.stringMatching(/^sess_/) });
      expect(await veil.schedules.setEnabled(schedule.id, false)).toMatchObject({ enabled: false, nextRunAt: null });
      expect((await veil.schedules.get(schedule.id)).enabled).toBe(false);
      await veil.schedules.delete(schedule.id);
      await expect(veil.schedules.get(schedule.id)).rejects.toMatchObject({ status: 404, code: "SCHEDULE_NOT_FOUND" });
      await expect(veil.schedules.create({ agent: "default", prompt: "x", cron: "nope" })).rejects.toMatchObject({ status: 400, code: "VALIDATION_ERROR" });
      expect(await veil.webhooks.deliveries({ status: "pending" })).toEqual([]);
    } finally {
      llm.respond(null);
    }
  });

  it("checkpoints, revert, unrevert and fork", async () => {
    const session = await veil.sessions.create();
    llm.enqueue(reply().tool("write_file", { file: join(ws.root, "client-made.txt"), content: "made\n" }).stop(), reply().text("made").stop());
    await veil.chat(session.id, "make a file");
    const { checkpoints, revert } = await veil.sessions.checkpoints(session.id);
    expect(revert).toBeNull();
    expect(checkpoints).toEqual([expect.objectContaining({ files: [{ path: "client-made.txt", change: "added" }] })]);
    const messageId = checkpoints[0]!.messageId;
    expect(await veil.sessions.revert(session.id, messageId)).toEqual({ messageId, files: [{ path: "client-made.txt", change: "added" }] });
    expect((await veil.sessions.messages(session.id)).every((m) => m.reverted)).toBe(true);
    expect((await veil.sessions.checkpoints(session.id)).revert).toMatchObject({ messageId });
    await veil.sessions.unrevert(session.id);
    expect((await veil.sessions.checkpoints(session.id)).checkpoints).toHaveLength(1);
    await expect(veil.sessions.unrevert(session.id)).rejects.toMatchObject({ status: 409, code: "CONFLICT" });
    const fork = await veil.sessions.fork(session.id, messageId);
    expect(fork.forked_from).toBe(session.id);
    expect((await veil.sessions.messages(fork.id)).map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
  });

  it("stream tokens: mint, and revoke", async () => {
    const minted = await veil.streamToken();
    const res = await fetch(`${server.url}/events?token=${minted.token}`);
    expect(res.status).toBe(200);
    await res.body?.cancel();
    expect(await veil.revokeStreamTokens(minted.token)).toEqual({ revoked: true });
    expect((await fetch(`${server.url}/events?token=${minted.token}`)).status).toBe(401);
  });

  it("keys: create, list, a client with the key sees only its sessions, revoke; the audit lists what changed", async () => {
    const before = await veil.audit();
    const created = await veil.keys.create({ name: "client", scopes: ["chat"], budgetUsd: 3 });
    expect(created.key).toMatch(/^veil_sk_/);
    expect((await veil.keys.list()).find((k) => k.id === created.id)).toMatchObject({ name: "client", scopes: ["chat"], budgetUsd: 3, spentUsd: 0, revokedAt: null });
    const asKey = new VeilClient({ baseUrl: server.url, secret: created.key });
    const own = await asKey.sessions.create({});
    expect((await asKey.sessions.list()).map((s) => s.id)).toEqual([own.id]);
    const refused = await asKey.keys.list().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(VeilApiError);
    expect((refused as VeilApiError).code).toBe("FORBIDDEN");
    expect((await veil.keys.revoke(created.id)).revokedAt).toMatch(/^\d{4}-/);
    expect((await asKey.sessions.list().catch((error: unknown) => error as VeilApiError)) as VeilApiError).toMatchObject({ status: 401, code: "UNAUTHORIZED" });
    const after = await veil.audit({ after: before.at(-1)?.seq ?? 0 });
    expect(after.map((e) => [e.key, e.method, e.path, e.status])).toEqual([
      ["admin", "POST", "/keys", 201],
      [created.id, "POST", "/sessions", 201],
      ["admin", "DELETE", `/keys/${created.id}`, 200],
    ]);
    expect(after[1]!.sessionId).toBe(own.id);
  });
});

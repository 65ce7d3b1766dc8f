import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";
import { present } from "../helpers/requirements.js";

/**
 * Crash validity (every tool call answered, nothing acknowledged lost): a real `veil serve` is killed with SIGKILL at chosen
 * points; a new one on the same workspace must hand the model a history where every
 * assistant tool_call has exactly one result, in call order, and the next chat works.
 */
const MAIN = join(process.cwd(), "dist/src/main.js");
const SECRET = "crash-secret";

let ws: TempWorkspace;
let llm: FakeLlm;
let child: ChildProcess | undefined;

beforeEach(async () => {
  ws = tmpWorkspace();
  llm = await startFakeLlm();
});
afterEach(async () => {
  child?.kill("SIGKILL");
  await llm.close();
  ws.cleanup();
});

async function serve(): Promise<{ url: string; call(path: string, init?: RequestInit): Promise<Response> }> {
  const env = { ...process.env, VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk-test", VEIL_MODEL: "fake-model", VEIL_HOME: join(ws.root, ".home"), VEIL_LOG_LEVEL: "error" };
  const proc = spawn(process.execPath, [MAIN, "serve", "--port", "0", "--workspace", ws.root, "--secret", SECRET], { env, stdio: ["ignore", "pipe", "pipe"] });
  child = proc;
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    proc.stdout!.on("data", (d) => {
      out += String(d);
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    proc.once("exit", (code) => reject(new Error(`veil serve exited ${code}`)));
  });
  return {
    url,
    call: (path, init = {}) => fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${SECRET}`, "content-type": "application/json", ...(init.headers as Record<string, string>) } }),
  };
}

async function killHard(): Promise<void> {
  const proc = child!;
  const exited = new Promise((r) => proc.once("exit", r));
  proc.kill("SIGKILL");
  await exited;
  child = undefined;
}

/** Waits for the first event of `type` on the session's stream. */
async function waitForEvent(server: { call(path: string, init?: RequestInit): Promise<Response> }, sessionId: string, match: (e: any) => boolean): Promise<void> {
  const controller = new AbortController();
  const res = await server.call(`/sessions/${sessionId}/events?lastEventId=0`, { signal: controller.signal });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error("stream ended");
      buffer += decoder.decode(value, { stream: true });
      for (const line of buffer.split("\n")) if (line.startsWith("data: ") && match(JSON.parse(line.slice(6)))) return;
    }
  } finally {
    controller.abort();
  }
}

function expectAnswered(messages: { role: string; tool_calls?: { id: string }[]; tool_call_id?: string }[]): void {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role !== "assistant" || !m.tool_calls?.length) continue;
    const following = messages.slice(i + 1, i + 1 + m.tool_calls.length);
    expect(following.map((f) => f.role)).toEqual(m.tool_calls.map(() => "tool"));
    expect(following.map((f) => f.tool_call_id)).toEqual(m.tool_calls.map((c) => c.id));
  }
}

describe.skipIf(!present(`the build (${MAIN})`, existsSync(MAIN)))("kill -9 at chosen points (spawned veil serve)", () => {
  it("after the first of two parallel results: the finished result is kept, the other gets a placeholder, the next chat works", async () => {
    let server = await serve();
    const session = await (await server.call("/sessions", { method: "POST", body: "{}" })).json();
    llm.enqueue(reply().tool("bash", { command: "sleep 3131" }).tool("log_write", { message: "finished first" }).stop());
    void server.call(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "go" }) }).catch(() => undefined);
    await waitForEvent(server, session.id, (e) => e.type === "tool.end" && e.toolName === "log_write");
    await killHard();

    server = await serve();
    const rows = await (await server.call(`/sessions/${session.id}/messages`)).json();
    const tools = rows.filter((r: { role: string }) => r.role === "tool");
    expect(tools).toHaveLength(2);
    expect(tools.find((t: { content: string }) => t.content === "finished first")).toBeDefined();
    expect(tools.find((t: { content: string }) => /^Error: CANCELLED —/.test(t.content))).toBeDefined();
    expect((await (await server.call(`/sessions/${session.id}`)).json()).status).toBe("idle");

    llm.enqueue(reply().text("back again").stop());
    const res = await server.call(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "still there?" }) });
    expect(res.status).toBe(200);
    expect((await res.json()).content).toBe("back again");
    const request = llm.completionRequests.at(-1)!.body.messages;
    expectAnswered(request);
    const assistant = request.find((m: { role: string }) => m.role === "assistant");
    expect(assistant.tool_calls.map((c: { function: { name: string } }) => c.function.name)).toEqual(["bash", "log_write"]);
  });

  it("mid-stream: the cut response leaves no assistant row, the user message stays, the next chat works", async () => {
    let server = await serve();
    const session = await (await server.call("/sessions", { method: "POST", body: "{}" })).json();
    llm.enqueue(reply().text("partial ").waitFor(new Promise(() => undefined)).text("never").stop());
    void server.call(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "tell me" }) }).catch(() => undefined);
    await waitForEvent(server, session.id, (e) => e.type === "chat.chunk");
    await killHard();

    server = await serve();
    const rows = await (await server.call(`/sessions/${session.id}/messages`)).json();
    expect(rows.map((r: { role: string; content: string }) => [r.role, r.content])).toEqual([["user", "tell me"]]);
    llm.enqueue(reply().text("complete answer").stop());
    const res = await server.call(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "again" }) });
    expect((await res.json()).content).toBe("complete answer");
    expectAnswered(llm.completionRequests.at(-1)!.body.messages);
  });

  it("right after the assistant step was stored, before any tool ran to the end: both calls get placeholders", async () => {
    let server = await serve();
    const session = await (await server.call("/sessions", { method: "POST", body: "{}" })).json();
    llm.enqueue(reply().tool("bash", { command: "sleep 3132" }).tool("bash", { command: "sleep 3133" }).stop());
    void server.call(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "go" }) }).catch(() => undefined);
    await waitForEvent(server, session.id, (e) => e.type === "chat.message" && e.role === "assistant");
    await killHard();

    server = await serve();
    const rows = await (await server.call(`/sessions/${session.id}/messages`)).json();
    const assistant = rows.find((r: { role: string }) => r.role === "assistant");
    expect(assistant.tool_calls).toHaveLength(2);
    const results = rows.filter((r: { role: string }) => r.role === "tool");
    expect(results.map((r: { tool_call_id: string }) => r.tool_call_id).sort()).toEqual(assistant.tool_calls.map((c: { id: string }) => c.id).sort());
    llm.enqueue(reply().text("ok").stop());
    const res = await server.call(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "next" }) });
    expect(res.status).toBe(200);
    expectAnswered(llm.completionRequests.at(-1)!.body.messages);
  });
});

/**
 * Approvals before risky calls: a listed tool's call raises the `tool_approval` remote
 * method after its checks and hooks, and runs only on `{ approved: true }`; a denial, a
 * timeout, a cancelled turn or a closed session answer the model `Error: DENIED — …`.
 * Driven over HTTP as a UI would (GET /remote-methods/pending, POST …/result).
 */
import { existsSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import type { VeilEvent } from "../../src/base/events.js";
import { approvalPolicy, matchesApproval } from "../../src/core/approvals.js";
import { defaultSettings } from "../../src/config/defaults.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { reply } from "../helpers/fake-llm.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

type Pending = VeilEvent & { type: "method.pending"; id: string; method: string; data: { toolName: string; toolInput: Record<string, unknown>; toolCallId: string } };

/** Resolves with the next `method.pending` of tool_approval. */
function nextApproval(): Promise<Pending> {
  return new Promise((resolve) => {
    const off = h.runtime.bus.subscribe({ types: ["method.pending"] }, (event) => {
      if ((event as Pending).method !== "tool_approval") return;
      off();
      resolve(event as Pending);
    });
  });
}

const toolResults = (request: number) => (h.llm.completionRequests[request]!.body.messages as { role: string; content: string }[]).filter((m) => m.role === "tool").map((m) => m.content);

async function start(settings: Record<string, unknown>, files: Record<string, string> = {}) {
  h = await createRuntimeHarness({ settings: { approval: { tools: ["write_file"], timeoutSeconds: 300 }, ...settings }, files });
  const server = await h.serve();
  const session = await h.runtime.sessions.create({ agent: "default" });
  const answer = async (id: string, result: unknown) => server.fetch(`/remote-methods/${id}/result`, { method: "POST", body: JSON.stringify({ result }) });
  return { server, session, answer };
}

describe("approvals", () => {
  it("asks with { toolName, toolInput, toolCallId } over the remote-method flow and runs the call on { approved: true }", async () => {
    const { server, session, answer } = await start({});
    h.llm.enqueue(reply().tool("write_file", { file: "approved.txt", content: "yes" }, { id: "call_w1" }).stop());
    h.llm.enqueue(reply().text("done").stop());
    const asked = nextApproval();
    const receipt = await h.runtime.sessions.send(session.id, "write it");
    const pending = await asked;
    expect(pending).toMatchObject({ sessionId: session.id, method: "tool_approval", data: { toolName: "write_file", toolInput: { file: "approved.txt", content: "yes" }, toolCallId: "call_w1" } });
    expect(existsSync(h.ws.path("approved.txt"))).toBe(false);
    const listed = (await (await server.fetch("/remote-methods/pending")).json()) as { methods?: { id: string }[] } | { id: string }[];
    expect(JSON.stringify(listed)).toContain(pending.id);
    expect((await answer(pending.id, { approved: true })).status).toBe(200);
    expect((await receipt.result).content).toBe("done");
    expect(readFileSync(h.ws.path("approved.txt"), "utf8")).toBe("yes");
    expect(toolResults(1)[0]).not.toMatch(/DENIED/);
  });

  it("a denial answers the model `Error: DENIED — <reason>` and runs nothing; unlisted tools are not asked", async () => {
    const { session, answer } = await start({}, { "present.txt": "p" });
    h.llm.enqueue(reply().tool("read_file", { file: "present.txt" }).tool("write_file", { file: "denied.txt", content: "no" }).stop());
    h.llm.enqueue(reply().text("ok").stop());
    const asked = nextApproval();
    const receipt = await h.runtime.sessions.send(session.id, "try");
    const pending = await asked;
    expect(pending.data.toolName).toBe("write_file");
    await answer(pending.id, { approved: false, reason: "not in this folder" });
    await receipt.result;
    expect(existsSync(h.ws.path("denied.txt"))).toBe(false);
    const results = toolResults(1);
    expect(results[0]).toContain("p");
    expect(results[1]).toBe("Error: DENIED — not in this folder");
    expect(h.events.filter((e) => e.type === "method.pending")).toHaveLength(1);
  });

  it("no answer within timeoutSeconds is a denial", async () => {
    const { session } = await start({ approval: { tools: ["write_*"], timeoutSeconds: 0.2 } });
    h.llm.enqueue(reply().tool("write_file", { file: "late.txt", content: "x" }).stop());
    h.llm.enqueue(reply().text("ok").stop());
    const receipt = await h.runtime.sessions.send(session.id, "try");
    await receipt.result;
    expect(toolResults(1)[0]).toBe("Error: DENIED — no answer within 0.2 s");
    expect(existsSync(h.ws.path("late.txt"))).toBe(false);
    expect(h.events.find((e) => e.type === "method.done")).toMatchObject({ timedOut: true });
  });

  it("a cancelled turn and a closed session resolve a pending approval as denied", async () => {
    const { session } = await start({});
    h.llm.enqueue(reply().tool("write_file", { file: "cancelled.txt", content: "x" }).stop());
    const asked = nextApproval();
    const receipt = await h.runtime.sessions.send(session.id, "try");
    const pending = await asked;
    await h.runtime.sessions.cancel(session.id);
    expect((await receipt.result).stopReason).toBe("cancelled");
    expect(h.events.find((e) => e.type === "method.done" && (e as { id: string }).id === pending.id)).toBeDefined();
    expect(existsSync(h.ws.path("cancelled.txt"))).toBe(false);
    const ended = (await h.runtime.store.listMessages(session.id)).filter((m) => m.role === "tool").map((m) => m.content);
    expect(ended.join("\n")).toMatch(/DENIED — the turn was cancelled|CANCELLED/);

    const other = await h.runtime.sessions.create({ agent: "default" });
    h.llm.enqueue(reply().tool("write_file", { file: "closed.txt", content: "x" }).stop());
    const again = nextApproval();
    const second = await h.runtime.sessions.send(other.id, "try");
    const waiting = await again;
    await h.runtime.sessions.close(other.id);
    await second.result.catch(() => undefined);
    expect(h.events.find((e) => e.type === "method.done" && (e as { id: string }).id === waiting.id)).toBeDefined();
    expect(existsSync(h.ws.path("closed.txt"))).toBe(false);
  });

  it("approves parallel calls one by one, in order", async () => {
    const { session, answer } = await start({});
    h.llm.enqueue(reply().tool("write_file", { file: "one.txt", content: "1" }, { id: "call_a" }).tool("write_file", { file: "two.txt", content: "2" }, { id: "call_b" }).stop());
    h.llm.enqueue(reply().text("ok").stop());
    const first = nextApproval();
    const receipt = await h.runtime.sessions.send(session.id, "two writes");
    const a = await first;
    expect(a.data.toolCallId).toBe("call_a");
    // The second call waits for the first answer: only one approval is pending.
    expect((h.runtime.services.remoteMethods as { pendingIds(): string[] }).pendingIds()).toEqual([a.id]);
    const second = nextApproval();
    await answer(a.id, { approved: true });
    const b = await second;
    expect(b.data.toolCallId).toBe("call_b");
    await answer(b.id, { approved: false, reason: "one is enough" });
    await receipt.result;
    expect(existsSync(h.ws.path("one.txt"))).toBe(true);
    expect(existsSync(h.ws.path("two.txt"))).toBe(false);
    expect(toolResults(1)).toEqual([expect.not.stringMatching(/DENIED/), "Error: DENIED — one is enough"]);
  });
});

describe("approval policy", () => {
  it("matches names and prefix* patterns; an agent adds tools and may shorten the timeout, never loosen", () => {
    expect(matchesApproval("mcp__github__create_issue", ["bash", "mcp__*"])).toBe(true);
    expect(matchesApproval("bash", ["bash", "mcp__*"])).toBe(true);
    expect(matchesApproval("bash_output", ["bash", "mcp__*"])).toBe(false);
    expect(matchesApproval("anything", ["*"])).toBe(true);
    const settings = { ...defaultSettings(), approval: { tools: ["bash"], timeoutSeconds: 300 } };
    expect(approvalPolicy(settings, {})).toEqual({ tools: ["bash"], timeoutSeconds: 300 });
    expect(approvalPolicy(settings, { approval: { tools: ["write_file"], timeoutSeconds: 600 } })).toEqual({ tools: ["bash", "write_file"], timeoutSeconds: 300 });
    expect(approvalPolicy(settings, { approval: { timeoutSeconds: 30 } })).toEqual({ tools: ["bash"], timeoutSeconds: 30 });
  });
});

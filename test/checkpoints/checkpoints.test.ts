import { afterEach, describe, expect, it } from "vitest";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { hang } from "../helpers/fake-llm.js";
import { json, seedWorkspace, turn, userMessageIds, bash, checkpoints, text } from "./helpers.js";
import { revertFlow } from "./revert-flow.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("checkpoints over HTTP (SQLite)", () => {
  it("checkpoints write, edit and bash changes (binary, modes, nested folders) and reverts, unreverts and reverts again", async () => {
    h = await createRuntimeHarness();
    await revertFlow(h, await h.serve());
  });

  it("a run's first call that changes a file waits for the baseline taken beside the first model call: the checkpoint has the file as it was", async () => {
    // Enough files that the baseline (a scan and a copy of each) is still being taken when the
    // instant first answer asks to overwrite one of them.
    const files: Record<string, string> = {};
    for (let i = 0; i < 1500; i++) files[`pkg/m${String(i).padStart(4, "0")}.txt`] = `module ${i}\n`.repeat(200);
    h = await createRuntimeHarness({ files });
    const server = await h.serve();
    const { id } = await json(await server.fetch("/sessions", { method: "POST", body: "{}" }), 201);
    await turn(h, server, id, "overwrite", [[bash("echo changed > pkg/m1499.txt; rm pkg/m0000.txt")]]);
    expect(text(h.ws.root, "pkg/m1499.txt")).toBe("changed\n");
    const [cp] = (await checkpoints(server, id)).checkpoints;
    expect(cp!.files.map((f) => [f.path, f.change])).toEqual([
      ["pkg/m0000.txt", "deleted"],
      ["pkg/m1499.txt", "modified"],
    ]);
    const [m1] = await userMessageIds(server, id);
    expect((await server.fetch(`/sessions/${id}/revert`, { method: "POST", body: JSON.stringify({ messageId: m1 }) })).status).toBe(200);
    expect(text(h.ws.root, "pkg/m1499.txt")).toBe("module 1499\n".repeat(200));
    expect(text(h.ws.root, "pkg/m0000.txt")).toBe("module 0\n".repeat(200));
  });

  it("refuses a revert while the session runs (409 SESSION_BUSY), and an unknown message (404)", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    seedWorkspace(h.ws.root);
    const { id } = await json(await server.fetch("/sessions", { method: "POST", body: "{}" }), 201);
    await turn(h, server, id, "first", [[bash("echo 1 > a.txt")]]);
    const [m1] = await userMessageIds(server, id);
    h.llm.enqueue(hang());
    const running = server.fetch(`/sessions/${id}/chat`, { method: "POST", body: JSON.stringify({ message: "hangs" }) });
    await h.llm.waitForRequests(3);
    const busy = await server.fetch(`/sessions/${id}/revert`, { method: "POST", body: JSON.stringify({ messageId: m1 }) });
    expect(busy.status).toBe(409);
    expect((await busy.json()).error.code).toBe("SESSION_BUSY");
    await server.fetch(`/sessions/${id}/cancel`, { method: "POST" });
    await running;
    expect(text(h.ws.root, "a.txt")).toBe("1\n");
    expect((await server.fetch(`/sessions/${id}/revert`, { method: "POST", body: JSON.stringify({ messageId: "msg_nope" }) })).status).toBe(404);
    expect((await server.fetch(`/sessions/${id}/revert`, { method: "POST", body: JSON.stringify({}) })).status).toBe(400);
  });

  it("forks a session up to and including a turn: same agent, model and mode, forked_from, files untouched", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    seedWorkspace(h.ws.root);
    const { id } = await json(await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ model: "fake-model", mode: "chat" }) }), 201);
    await turn(h, server, id, "first", [[bash("echo 1 > a.txt")]]);
    await turn(h, server, id, "second", [[bash("echo 2 > a.txt")]]);
    const [m1] = await userMessageIds(server, id);
    const fork = await json(await server.fetch(`/sessions/${id}/fork`, { method: "POST", body: JSON.stringify({ messageId: m1 }) }), 201);
    expect(fork).toMatchObject({ agent: "default", mode: "chat", model: "fake-model", forked_from: id, parent_session_id: null });
    const copied = await json<{ role: string; content: string | null; session_id: string }[]>(await server.fetch(`/sessions/${fork.id}/messages`));
    const original = await json<{ role: string; content: string | null }[]>(await server.fetch(`/sessions/${id}/messages`));
    const firstTurn = original.slice(0, original.findIndex((r, i) => i > 0 && r.role === "user"));
    expect(copied.map((r) => [r.role, r.content])).toEqual(firstTurn.map((r) => [r.role, r.content]));
    expect(copied.every((r) => r.session_id === fork.id)).toBe(true);
    expect(text(h.ws.root, "a.txt")).toBe("2\n");
    // Without messageId, the whole history; the fork goes on from it.
    const whole = await json(await server.fetch(`/sessions/${id}/fork`, { method: "POST" }), 201);
    expect((await json<unknown[]>(await server.fetch(`/sessions/${whole.id}/messages`))).length).toBe(original.length);
    const before = h.llm.completionRequests.length;
    await turn(h, server, whole.id, "go on", []);
    expect(JSON.stringify(h.llm.completionRequests[before]!.body.messages)).toContain("second");
    expect((await server.fetch(`/sessions/${id}/fork`, { method: "POST", body: JSON.stringify({ messageId: "msg_nope" }) })).status).toBe(404);
  });

  it("attributes what a background process changes after a turn ended to the next turn", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    seedWorkspace(h.ws.root);
    const { id } = await json(await server.fetch("/sessions", { method: "POST", body: "{}" }), 201);
    // The background job waits for a go file the test writes after the turn ended.
    await turn(h, server, id, "start a job", [[{ tool: "bash", input: { command: "(while [ ! -e .veil/go ]; do sleep 0.05; done; echo late > late.txt) > /dev/null 2>&1 &" } }]]);
    expect((await checkpoints(server, id)).checkpoints).toEqual([]);
    const { writeFileSync, existsSync } = await import("node:fs");
    writeFileSync(`${h.ws.root}/.veil/go`, "");
    await new Promise<void>((resolve) => {
      const poll = () => (existsSync(`${h!.ws.root}/late.txt`) ? resolve() : setTimeout(poll, 20));
      poll();
    });
    await turn(h, server, id, "next", []);
    const [, m2] = await userMessageIds(server, id);
    expect((await checkpoints(server, id)).checkpoints).toEqual([expect.objectContaining({ messageId: m2, files: [{ path: "late.txt", change: "added" }] })]);
  });
});

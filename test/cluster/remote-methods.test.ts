import { describe, expect, it } from "vitest";
import { reply, type FakeLlm } from "../helpers/fake-llm.js";
import { readSse } from "../helpers/sse-client.js";
import { answer, chat, clusterHarness, eventually, json, post } from "../helpers/cluster.js";
import type { SpawnedServer } from "../helpers/spawned-server.js";

const cluster = clusterHarness("cluster/remote-methods.test");

/** A custom tool that asks a UI and returns its answer (or the error it got instead). */
const ASK_TOOL = {
  ".veil/tools/ask_user/tool.json": JSON.stringify({
    name: "ask_user",
    description: "Asks the user through the UI.",
    input_schema: { type: "object", properties: { question: { type: "string" }, timeoutMs: { type: "number" } }, required: ["question"] },
    timeout: 30,
  }),
  ".veil/tools/ask_user/index.js":
    "'use strict';\nmodule.exports = async function execute(input) {\n" +
    "  try { return 'answer: ' + JSON.stringify(await input._remoteMethodExecution({ method: 'user-dialog', data: { question: input.question }, timeoutMs: input.timeoutMs })); }\n" +
    "  catch (error) { return 'no answer: ' + error.message; }\n};\n",
};

/** The user message "ask <timeoutMs>" makes the model activate ask_user and call it; then it echoes the tool's output. */
function scriptAsking(llm: FakeLlm): void {
  llm.respond((req) => {
    const sent = req.body.messages as { role: string; content: string }[];
    const last = sent.at(-1)!;
    if (last.role === "user") return reply().tool("tool_activate", { name: "ask_user" }).stop();
    if (last.content.startsWith('{"activated"')) {
      const timeoutMs = Number(sent.filter((m) => m.role === "user").at(-1)!.content.split(" ")[1]);
      return reply().tool("ask_user", { question: "proceed?", timeoutMs }).stop();
    }
    return reply().text(`tool said ${last.content}`).stop();
  });
}

const pendingIds = async (node: SpawnedServer) => (await json(node.fetch("/remote-methods/pending"))).pending as string[];
const postResult = (node: SpawnedServer, id: string, result: unknown) => answer(node.fetch(`/remote-methods/${id}/result`, { method: "POST", body: JSON.stringify({ result }) }));

/** A UI on `node`'s GET /remote-methods, read until `until` matches. */
async function ui(node: SpawnedServer, until: (data: any) => boolean) {
  const res = await node.fetch("/remote-methods", { headers: { accept: "text/event-stream" } });
  return readSse(res, { until: (m) => !!m.data && until(m.data) }).then((all) => all.map((m) => m.data).filter(Boolean));
}

/** Two nodes; a session created on A whose chat, sent to `chatVia`, waits in ask_user; B's UI saw the method. */
async function methodWaiting(chatVia: "a" | "b", timeoutMs: number) {
  const [a, b] = (await cluster.start(2, { files: ASK_TOOL })) as [SpawnedServer, SpawnedServer];
  scriptAsking(cluster.llm());
  const session = await post(a, "/sessions");
  const pendingOnB = ui(b, (d) => d.type === "method.pending");
  const running = chat(chatVia === "a" ? a : b, session.id, `ask ${timeoutMs}`);
  const [pending] = await pendingOnB;
  return { a, b, session, running, pending };
}

describe.skipIf(!!cluster.unavailable)("remote methods across nodes", () => {
  it("a method waiting on A is listed by B, answered through both at once (first wins), and its tool gets the winner", async () => {
    const { a, b, session, running, pending } = await methodWaiting("a", 20_000);
    expect(pending).toMatchObject({ type: "method.pending", method: "user-dialog", data: { question: "proceed?" }, sessionId: session.id });
    expect(await pendingIds(b)).toEqual([pending.id]);
    expect(await pendingIds(a)).toEqual([pending.id]);
    // A UI connecting to B now gets the pending method replayed first.
    expect((await ui(b, (d) => d.type === "method.pending"))[0]).toMatchObject({ id: pending.id, sessionId: session.id });

    const doneOnB = ui(b, (d) => d.type === "method.done");
    const answers = await Promise.all([a, b, a, b, b, a].map((node, i) => postResult(node, pending.id, { pick: i })));
    const winners = answers.filter((r) => r.status === 200);
    expect(winners).toEqual([{ status: 200, body: { ok: true, id: pending.id } }]);
    for (const loser of answers.filter((r) => r.status !== 200)) expect(loser).toEqual({ status: 409, body: { error: "not_found" } });
    const pick = answers.findIndex((r) => r.status === 200);
    expect((await running).content).toBe(`tool said answer: {"pick":${pick}}`);
    expect((await doneOnB).find((d) => d.type === "method.done")).toMatchObject({ id: pending.id, timedOut: false });
    expect(await pendingIds(b)).toEqual([]);
    expect(await postResult(b, pending.id, "late")).toEqual({ status: 409, body: { error: "not_found" } });
  }, 60_000);

  it("a method that times out on its owner leaves every node's list, and a late answer on another node gets 409", async () => {
    // The chat goes to B, which takes the new session and runs the tool; A lists the method too.
    // The timeout leaves time to see the method listed on A first, also on a loaded machine.
    const { a, b, running, pending } = await methodWaiting("b", 5000);
    expect(await pendingIds(a)).toEqual([pending.id]);
    expect((await running).content).toMatch(/^tool said no answer: .*5000 ms/);
    await eventually(async () => ((await pendingIds(a)).length === 0 && (await pendingIds(b)).length === 0 ? true : undefined), "the timed-out method to leave both lists");
    expect(await postResult(a, pending.id, "too late")).toEqual({ status: 409, body: { error: "not_found" } });
  }, 60_000);
});

import { describe, expect, it } from "vitest";
import { reply } from "../helpers/fake-llm.js";
import { readSse } from "../helpers/sse-client.js";
import { answer, chat, clusterHarness, eventually, json, messages, post, watch } from "../helpers/cluster.js";
import type { SpawnedServer } from "../helpers/spawned-server.js";
import { AnswerAssembly, answerBodies, decodeAnswer, encodeAnswer, type AnswerPiece, type ControlAnswer } from "../../src/core/cluster/control.js";
import { VeilError } from "../../src/errors.js";

const cluster = clusterHarness("cluster/control.test");

/** A session owned by `owner` (its first chat ran there), now inside a `sleep` tool call of `seconds`. */
async function runningOn(owner: SpawnedServer, seconds: number): Promise<{ id: string; chat: Promise<{ status: number; body: any }> }> {
  const session = await post(owner, "/sessions");
  cluster.llm().enqueue(reply().text("owned").stop());
  await chat(owner, session.id, "take it");
  cluster.llm().enqueue(reply().tool("sleep", { seconds }).stop());
  const started = await watch(owner, (d) => d.type === "tool.start" && d.sessionId === session.id);
  const running = answer(owner.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "run it" }) }));
  await started.done;
  return { id: session.id, chat: running };
}

const control = (node: SpawnedServer, id: string, action: string) =>
  answer(action === "close" ? node.fetch(`/sessions/${id}`, { method: "DELETE" }) : node.fetch(`/sessions/${id}/${action}`, { method: "POST", body: "{}" }));

/** The session row without the fields that move with every write. */
const stable = (body: any) => JSON.parse(JSON.stringify(body, (key, value) => (key === "updated_at" ? undefined : value)));

describe.skipIf(!!cluster.unavailable)("session control and streamed chats across nodes", () => {
  it("cancel, suspend and resume sent to a non-owner act on the owner's run and answer as the owner does", async () => {
    const [a, b] = await cluster.start(2);
    const { id, chat: cut } = await runningOn(a!, 60);
    const cancelled = await control(b!, id, "cancel");
    expect(cancelled).toMatchObject({ status: 200, body: { ok: true, cancelled: true, session: { id, status: "idle" } } });
    expect((await cut).body.stopReason).toBe("cancelled");
    // Idle now: the owner's and the non-owner's answers are the same.
    const [onOwner, onOther] = [await control(a!, id, "cancel"), await control(b!, id, "cancel")];
    expect(onOther.status).toBe(onOwner.status);
    expect(stable(onOther.body)).toEqual(stable(onOwner.body));
    expect(onOther.body.cancelled).toBe(false);

    // Suspend through B while A sleeps a second: A's run stops at its next boundary, no second model call.
    const { id: second, chat: suspendedRun } = await runningOn(a!, 1);
    const calls = cluster.llm().completionRequests.length;
    const suspended = await control(b!, second, "suspend");
    expect(suspended).toMatchObject({ status: 200, body: { ok: true, session: { id: second, status: "suspended" } } });
    expect((await suspendedRun).body.stopReason).toBe("suspended");
    expect(cluster.llm().completionRequests.length).toBe(calls);
    expect(await answer(b!.fetch(`/sessions/${second}/chat`, { method: "POST", body: JSON.stringify({ message: "hello?" }) }))).toMatchObject({ status: 409, body: { error: { code: "SESSION_SUSPENDED" } } });
    const resumed = await control(b!, second, "resume");
    expect(resumed).toMatchObject({ status: 200, body: { ok: true, session: { id: second, status: "idle" } } });
    // A still owns it: the next chat, sent to B, runs there and answers.
    cluster.llm().enqueue(reply().text("back").stop());
    expect((await chat(b!, second, "again")).content).toBe("back");
    // Compact through B: A summarises (its live context) and B answers with A's outcome.
    cluster.llm().enqueue(reply().text("the summary so far").stop());
    const compacted = await control(b!, second, "compact");
    expect(compacted).toMatchObject({ status: 200, body: { summaryMessageId: expect.any(String), tokensBefore: expect.any(Number) } });
    expect((await messages(a!, second)).find((m: any) => m.id === compacted.body.summaryMessageId)?.content).toMatch(/the summary so far/);
  }, 60_000);

  it("close on a non-owner closes the owner's running session; with no live owner the receiving node acts", async () => {
    const [a, b] = await cluster.start(2);
    const { id, chat: cut } = await runningOn(a!, 60);
    const closed = await control(b!, id, "close");
    expect(closed).toMatchObject({ status: 200, body: { id, status: "closed" } });
    expect((await cut).body).toMatchObject({ stopReason: "cancelled" });
    const tool = (await messages(b!, id)).find((m: any) => m.role === "tool");
    expect(JSON.stringify(tool)).toMatch(/cancel|closed/i);
    // Closing again answers from the stored row, the same on both nodes.
    const [again, onOwner] = [await control(b!, id, "close"), await control(a!, id, "close")];
    expect(stable(again)).toEqual(stable(onOwner));

    // The owner dies: B waits for its lease to expire, then takes the session and closes it itself.
    const session = await post(a!, "/sessions");
    cluster.llm().enqueue(reply().text("owned").stop());
    await chat(a!, session.id, "take it");
    await a!.kill();
    const afterDeath = await control(b!, session.id, "close");
    expect(afterDeath).toMatchObject({ status: 200, body: { id: session.id, status: "closed" } });
    expect((await json(b!.fetch(`/sessions/${session.id}`))).status).toBe("closed");
  }, 60_000);

  it("a streamed chat sent to a non-owner streams the owner's run, ends with it, and keeps its per-call model", async () => {
    const [a, b] = await cluster.start(2);
    cluster.llm().respond((req) => reply().text(`model=${req.body.model}`).stop());
    const session = await post(a!, "/sessions");
    expect((await chat(a!, session.id, "first")).content).toBe("model=fake-model");
    const res = await b!.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "stream it", stream: true, model: "call-model" }) });
    expect(res.status).toBe(200);
    const events = (await readSse(res)).map((m) => m.data).filter(Boolean);
    expect(events.map((e) => e.type)).toContain("chat.message");
    expect(events.at(-1)).toMatchObject({ type: "chat.done", content: "model=call-model" });
    // Accept: text/event-stream without stream: true streams too; a plain chat on B keeps its model.
    const viaHeader = await b!.fetch(`/sessions/${session.id}/chat`, { method: "POST", headers: { accept: "text/event-stream" }, body: JSON.stringify({ message: "again", model: "other-model" }) });
    expect((await readSse(viaHeader)).map((m) => m.data).filter(Boolean).at(-1)).toMatchObject({ type: "chat.done", content: "model=other-model" });
    expect((await post(b!, `/sessions/${session.id}/chat`, { message: "plain", model: "third-model" })).content).toBe("model=third-model");
    // The run options stay out of the stored message.
    const user = (await messages(b!, session.id)).filter((m: any) => m.role === "user");
    expect(user.map((m: any) => m.meta)).toEqual([{ source: "http" }, { source: "http" }, { source: "http" }, { source: "http" }]);
    await eventually(async () => ((await json(a!.fetch(`/sessions/${session.id}`))).status === "idle" ? true : undefined), "the session to be idle");
  }, 60_000);

  it("a chat with an output_schema sent to a non-owner runs on the owner under the schema, and B's reply and stream carry structured", async () => {
    const [a, b] = await cluster.start(2);
    const session = await post(a!, "/sessions");
    cluster.llm().enqueue(reply().text("owned").stop());
    await chat(a!, session.id, "take it");
    const output_schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false };
    cluster.llm().enqueue(reply().text("seven").stop(), reply().text('{"n":7}').stop());
    const body = await post(b!, `/sessions/${session.id}/chat`, { message: "a number?", output_schema });
    expect(body).toMatchObject({ stopReason: "stop", content: '{"n":7}', structured: { n: 7 } });
    // The owner asked once for a repair (the schema reached its run through the inbox row).
    const repairs = (await messages(b!, session.id)).filter((m: any) => m.meta?.source === "output_schema");
    expect(repairs).toHaveLength(1);
    expect(cluster.llm().completionRequests.at(-1)!.body.messages.at(-1).content).toContain("not valid JSON");

    cluster.llm().enqueue(reply().text('{"n":8}').stop());
    const res = await b!.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "another", output_schema, stream: true }) });
    expect((await readSse(res)).map((m) => m.data).filter(Boolean).at(-1)).toMatchObject({ type: "chat.done", structured: { n: 8 } });
  }, 60_000);
});

describe("control answers between nodes", () => {
  it("carry the owner's value, its VeilError (code, status, message, details) and a non-VeilError as an internal error", async () => {
    /** The answer's signal bodies as JSON crosses them, in `order`, put together again. */
    const across = (answer: ControlAnswer, order: (bodies: unknown[]) => unknown[] = (b) => b): ControlAnswer => {
      const bodies = order(answerBodies(answer).map((body) => JSON.parse(JSON.stringify(body))));
      for (const body of bodies) expect(Buffer.byteLength(JSON.stringify(body))).toBeLessThan(7000);
      if (bodies.length === 1 && "answer" in (bodies[0] as object)) return (bodies[0] as { answer: ControlAnswer }).answer;
      const assembly = new AnswerAssembly();
      const results = bodies.map((body) => assembly.add(body as AnswerPiece));
      expect(results.slice(0, -1).every((r) => r === undefined)).toBe(true);
      return results.at(-1)!;
    };
    const crossed = async (outcome: PromiseSettledResult<unknown>) => decodeAnswer(across(encodeAnswer(outcome)));
    const row = { id: "sess_1", status: "idle", token_usage: { total_tokens: 3 } };
    expect(await crossed({ status: "fulfilled", value: row })).toEqual(row);
    expect(await crossed({ status: "fulfilled", value: undefined })).toBeNull();
    // Longer than a NOTIFY payload (8000 bytes, multi-byte text too): it crosses in pieces, in any order, repeats ignored.
    const long = { ...row, objective: "x".repeat(9000), note: "é€😀".repeat(3000) };
    expect(answerBodies({ value: long }).length).toBeGreaterThan(2);
    expect(await crossed({ status: "fulfilled", value: long })).toEqual(long);
    const shuffled = decodeAnswer(across({ value: long }, (bodies) => [bodies[2], ...bodies.slice(0, 2), bodies[0], ...bodies.slice(3)]));
    expect(shuffled).toEqual(long);
    const owner = new VeilError("SESSION_CLOSED", 'session "sess_1" is closing', { details: { why: "test" } });
    const error = await crossed({ status: "rejected", reason: owner }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VeilError);
    expect(error).toMatchObject({ code: owner.code, status: owner.status, message: owner.message, details: owner.details });
    await expect(crossed({ status: "rejected", reason: new TypeError("boom") })).rejects.toMatchObject({ message: "boom", name: "Error" });
  });
});

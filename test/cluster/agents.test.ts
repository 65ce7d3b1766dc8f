import { describe, expect, it } from "vitest";
import { reply, type FakeLlm } from "../helpers/fake-llm.js";
import { chat, clusterHarness, eventually, messages, post, watch } from "../helpers/cluster.js";
import type { SpawnedServer } from "../helpers/spawned-server.js";

const cluster = clusterHarness("cluster/agents.test");

type Sent = { role: string; content: string | null; tool_calls?: { function: { name: string } }[] };

/**
 * P (the caller) says "sync <id>", "async <id>" or "async2 <id>" (two async messages at once) and calls agent_message; T answers "ping" with
 * "pong", "ping-async" after a sleep of `sleepSeconds` with "pong-async", and each "ping-async2"
 * after a sleep of 2 s with "pong-async" (so the second of the pair always arrives while T's run
 * is on, however slow the hop between nodes); P says what its tool returned, and "P saw the
 * reply" when T's reply arrives as a new user message.
 */
function script(llm: FakeLlm, sleepSeconds: number): void {
  llm.respond((req) => {
    const sent = req.body.messages as Sent[];
    const last = sent.at(-1)!;
    const text = last.content ?? "";
    if (last.role === "tool") {
      const tool = sent.findLast((m) => m.role === "assistant")!.tool_calls![0]!.function.name;
      return reply().text(tool === "sleep" ? "pong-async" : `P got: ${text}`).stop();
    }
    const [verb, target] = text.split(" ");
    if (verb === "async2") {
      const send = { sessionId: target, message: "ping-async2", async_inform: true };
      return reply().tool("agent_message", send).tool("agent_message", send).stop();
    }
    if (verb === "sync" || verb === "async") return reply().tool("agent_message", { sessionId: target, message: verb === "sync" ? "ping" : "ping-async", async_inform: verb === "async" }).stop();
    if (text.endsWith("]: ping")) return reply().text("pong").stop();
    if (text.endsWith("]: ping-async")) return reply().tool("sleep", { seconds: sleepSeconds }).stop();
    if (text.endsWith("]: ping-async2")) return reply().tool("sleep", { seconds: 2 }).stop();
    if (text.includes("]: pong-async")) return reply().text("P saw the reply").stop();
    return reply().text("here").stop();
  });
}

/** T owned by B (its first chat ran there), P owned by A. */
async function callerAndTarget(a: SpawnedServer, b: SpawnedServer): Promise<{ p: string; t: string }> {
  const t = (await post(b, "/sessions")).id as string;
  await chat(b, t, "hello");
  const p = (await post(a, "/sessions")).id as string;
  await chat(a, p, "hello");
  return { p, t };
}

const replies = async (node: SpawnedServer, p: string, t: string) =>
  (await messages(node, p)).filter((m: any) => m.role === "user" && m.meta?.source === "agent" && m.meta?.fromSessionId === t);

describe.skipIf(!!cluster.unavailable)("agent_message across nodes", () => {
  it("reaches a target owned by another node, sync and async; the async reply comes back once", async () => {
    const [a, b] = (await cluster.start(2)) as [SpawnedServer, SpawnedServer];
    script(cluster.llm(), 0);
    const { p, t } = await callerAndTarget(a, b);
    expect((await chat(a, p, `sync ${t}`)).content).toMatch(/^P got: [\s\S]*pong/);

    const seen = await watch(a, (d) => d.type === "chat.done" && d.sessionId === p && d.content === "P saw the reply");
    expect((await chat(a, p, `async ${t}`)).content).toMatch(/queued/);
    await seen.done;
    const got = await replies(a, p, t);
    expect(got).toHaveLength(1);
    expect(got[0].content).toMatch(/pong-async/);
    expect((await messages(b, t)).filter((m: any) => m.role === "user").map((m: any) => m.content)).toEqual([
      "hello",
      expect.stringMatching(/\]: ping$/),
      expect.stringMatching(/\]: ping-async$/),
    ]);

    // Two async messages at once: msg#1 and msg#2+. T's node applies the coincide rule to the
    // follower (its reply would be msg#1's final text), so P gets one reply, not two.
    const twice = await watch(a, (d) => d.type === "chat.done" && d.sessionId === p && d.content === "P saw the reply");
    await chat(a, p, `async2 ${t}`);
    await twice.done;
    await eventually(async () => ((await messages(b, t)).some((m: any) => m.meta?.dispatch_role === "msg#2+" && m.meta?.coincided === true) ? true : undefined), "the follower to coincide");
    expect(await replies(a, p, t)).toHaveLength(2);
  }, 60_000);

  it("the target's node answers an async message although the caller's node died meanwhile", async () => {
    const [a, b] = (await cluster.start(2)) as [SpawnedServer, SpawnedServer];
    script(cluster.llm(), 3);
    const { p, t } = await callerAndTarget(a, b);
    const seen = await watch(b, (d) => d.type === "chat.done" && d.sessionId === p && d.content === "P saw the reply");
    expect((await chat(a, p, `async ${t}`)).content).toMatch(/queued/);
    await a.kill(); // T still sleeps on B; P's lease expires and B takes P over
    await seen.done;
    expect(await replies(b, p, t)).toHaveLength(1);
  }, 60_000);
});

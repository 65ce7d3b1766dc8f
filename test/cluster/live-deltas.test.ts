/**
 * Live deltas (chat.chunk, thinking.chunk, tool.chunk) are never stored, so before the relay
 * a client connected to another node than the owner saw a run's text only at its end. Two
 * `veil serve` nodes on a real PostgreSQL: the owner's deltas reach the other node's SSE.
 */
import { describe, expect, it } from "vitest";
import { chat, clusterFile, clusterUnavailable, post, reply, watch, type ClusterNodes } from "../helpers/cluster-nodes.js";

const file = clusterFile("live-deltas.test");

describe.skipIf(!!clusterUnavailable)("live deltas across nodes", () => {
  it("reach the SSE clients of a node that does not run the session, in order, before chat.done", async () => {
    const cluster = await file.start(2);
    const [a, b] = cluster.nodes as [NonNullable<ClusterNodes["nodes"][0]>, NonNullable<ClusterNodes["nodes"][0]>];
    const session = await post(a, "/sessions");
    const long = "x".repeat(20_000);
    cluster.llm.enqueue(
      reply().tool("bash", { command: "printf 'from the shell'" }).stop(),
      reply().thinking("thinking it over").text("streamed ").text("across ").text(`nodes ${long}`).stop(),
    );
    const onB = await watch(b, (d) => d.type === "chat.done" && d.sessionId === session.id);
    const onA = await watch(a, (d) => d.type === "chat.done" && d.sessionId === session.id);
    const answer = await chat(a, session.id, "stream something");
    expect(answer.content).toBe(`streamed across nodes ${long}`);

    const seenOnA = (await onA.done).map((m) => m.data).filter((d) => d.sessionId === session.id);
    const seenOnB = (await onB.done).map((m) => m.data).filter((d) => d.sessionId === session.id);
    const deltas = (events: any[]) => events.filter((d) => d.type.endsWith(".chunk"));
    // The other node sees the owner's deltas as the owner's clients do (a large one may arrive in pieces).
    const text = (events: any[], type: string) => deltas(events).filter((d) => d.type === type).map((d) => d.content ?? d.chunk).join("");
    for (const type of ["chat.chunk", "thinking.chunk", "tool.chunk"]) expect(text(seenOnB, type), type).toBe(text(seenOnA, type));
    expect(text(seenOnB, "chat.chunk")).toBe(`streamed across nodes ${long}`);
    expect(text(seenOnB, "thinking.chunk")).toBe("thinking it over");
    expect(text(seenOnB, "tool.chunk")).toContain("from the shell");
    // Live only: no seq, and each came before the stored event that follows it on the owner.
    expect(deltas(seenOnB).every((d) => d.seq === undefined)).toBe(true);
    const lastChunk = seenOnB.findLastIndex((d) => d.type === "chat.chunk");
    expect(lastChunk).toBeLessThan(seenOnB.findIndex((d) => d.type === "chat.done"));
  }, 90_000);
});

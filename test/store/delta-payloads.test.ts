import { describe, expect, it } from "vitest";
import type { LiveDelta } from "../../src/store/cluster.js";
import { deltaPayloads, parseSignal } from "../../src/store/postgres/signals.js";
import { CHANNELS } from "../../src/store/postgres/channels.js";

const chunk = (content: string, sessionId = "s1"): LiveDelta => ({ sessionId, ts: 1, body: { type: "chat.chunk", content } });

describe("live deltas as NOTIFY payloads", () => {
  it("fit every payload under PostgreSQL's 8000-byte limit and read back, in order, as what was sent", () => {
    const deltas = [chunk("héllo "), ...Array.from({ length: 300 }, (_, i) => chunk(`piece ${i} `)), chunk("€".repeat(9000)), { sessionId: "s2", ts: 2, body: { type: "tool.chunk", toolName: "bash", toolCallId: "c", chunk: "\n".repeat(5000) } } as LiveDelta];
    const payloads = deltaPayloads("node-a", deltas);
    expect(payloads.length).toBeGreaterThan(2);
    for (const payload of payloads) expect(Buffer.byteLength(payload)).toBeLessThan(8000);
    // Identical payloads would be folded into one notification by the transaction: each differs.
    expect(new Set(payloads).size).toBe(payloads.length);
    const read = payloads.flatMap((p) => {
      const signal = parseSignal(CHANNELS.deltas, p);
      if (signal?.kind !== "deltas") throw new Error("not a deltas signal");
      expect(signal.nodeId).toBe("node-a");
      return signal.deltas;
    });
    const text = (list: LiveDelta[], sessionId: string) => list.filter((d) => d.sessionId === sessionId).map((d) => (d.body as { content?: string; chunk?: string }).content ?? (d.body as { chunk: string }).chunk).join("");
    expect(text(read, "s1")).toBe(text(deltas, "s1"));
    expect(text(read, "s2")).toBe("\n".repeat(5000));
    expect(read.filter((d) => d.sessionId === "s2").every((d) => d.body.type === "tool.chunk")).toBe(true);
  });

  it("sends nothing for no deltas", () => {
    expect(deltaPayloads("node-a", [])).toEqual([]);
  });
});

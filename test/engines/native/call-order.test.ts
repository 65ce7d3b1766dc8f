import { afterEach, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import type { VeilEvent } from "../../../src/base/events.js";
import type { RunEvent, ToolCallResult } from "../../../src/engines/types.js";
import { runToolCalls } from "../../../src/engines/tool-events.js";
import type { ToolCallRequest } from "../../../src/llm/types.js";
import { createRuntimeHarness, type RuntimeHarness } from "../../helpers/runtime.js";
import { reply } from "../../helpers/fake-llm.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const REPETITIONS = 10;

describe("tool calls of one response that touch the same path", () => {
  it(`two edit_file calls on one file both land (${REPETITIONS} of ${REPETITIONS})`, async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < REPETITIONS; i++) files[`f${i}.txt`] = `alpha ${i}\nmiddle\nomega ${i}\n`;
    h = await createRuntimeHarness({ files });
    const session = await h.runtime.sessions.create({ agent: "default" });
    for (let i = 0; i < REPETITIONS; i++) {
      const file = h.ws.path(`f${i}.txt`);
      h.llm.enqueue(reply().tool("read_file", { file }, { id: `read_${i}` }).stop());
      h.llm.enqueue(
        reply()
          .tool("edit_file", { file, old_string: `alpha ${i}`, new_string: `ALPHA ${i}` }, { id: `edit_a_${i}` })
          .tool("edit_file", { file: `f${i}.txt`, old_string: `omega ${i}`, new_string: `OMEGA ${i}` }, { id: `edit_b_${i}` })
          .stop(),
      );
      h.llm.enqueue(reply().text(`edited ${i}`).stop());
      const result = await (await h.runtime.sessions.send(session.id, `edit f${i}.txt twice`)).result;
      expect(result.content).toBe(`edited ${i}`);
    }
    const lost: string[] = [];
    for (let i = 0; i < REPETITIONS; i++) {
      const text = readFileSync(h.ws.path(`f${i}.txt`), "utf8");
      if (text !== `ALPHA ${i}\nmiddle\nOMEGA ${i}\n`) lost.push(`f${i}.txt: ${JSON.stringify(text)}`);
    }
    expect(lost).toEqual([]);
    const edits = h.events.filter((e): e is Extract<VeilEvent, { type: "tool.end" }> => e.type === "tool.end" && e.toolName === "edit_file");
    expect(edits).toHaveLength(2 * REPETITIONS);
    expect(edits.every((e) => e.success)).toBe(true);
    // One after another, in the order the model wrote them.
    for (let i = 0; i < REPETITIONS; i++) {
      const order = h.events
        .filter((e) => (e.type === "tool.start" || e.type === "tool.end") && String((e as { toolCallId?: string }).toolCallId).endsWith(`_${i}`) && (e as { toolName?: string }).toolName === "edit_file")
        .map((e) => `${e.type}:${(e as { toolCallId: string }).toolCallId}`);
      expect(order).toEqual([`tool.start:edit_a_${i}`, `tool.end:edit_a_${i}`, `tool.start:edit_b_${i}`, `tool.end:edit_b_${i}`]);
    }
  });

  it("calls that touch nothing in common still overlap: two sleeps and two writes of different files all start before any ends", async () => {
    h = await createRuntimeHarness();
    h.llm.enqueue(
      reply()
        .tool("sleep", { seconds: 0.3 }, { id: "sleep_one" })
        .tool("sleep", { seconds: 0.3 }, { id: "sleep_two" })
        .tool("write_file", { file: "a.txt", content: "a" }, { id: "write_a" })
        .tool("write_file", { file: "b.txt", content: "b" }, { id: "write_b" })
        .stop(),
    );
    h.llm.enqueue(reply().text("slept").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    expect((await (await h.runtime.sessions.send(session.id, "sleep twice")).result).content).toBe("slept");
    const order = h.events
      .filter((e) => e.sessionId === session.id && (e.type === "tool.start" || e.type === "tool.end"))
      .map((e) => `${e.type === "tool.start" ? "start" : "end"}:${(e as { toolCallId: string }).toolCallId}`);
    const firstEnd = order.findIndex((entry) => entry.startsWith("end:"));
    expect(order.slice(0, firstEnd).sort()).toEqual(["start:sleep_one", "start:sleep_two", "start:write_a", "start:write_b"]);
    expect(readFileSync(h.ws.path("a.txt"), "utf8")).toBe("a");
    expect(readFileSync(h.ws.path("b.txt"), "utf8")).toBe("b");
  });
});

describe("runToolCalls with paths", () => {
  function gate() {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    return { opened, open };
  }
  const call = (id: string): ToolCallRequest => ({ id, name: "t", arguments: "{}" });
  function executor(log: string[], gates: Map<string, { opened: Promise<void> }>, fail: string[] = []) {
    return {
      async *executeTool(request: ToolCallRequest): AsyncIterable<RunEvent> {
        log.push(`start ${request.id}`);
        yield { type: "tool_started", call: request, input: {} };
        await gates.get(request.id)?.opened;
        log.push(`end ${request.id}`);
        if (fail.includes(request.id)) return;
        const result: ToolCallResult = { call: request, output: request.id.toUpperCase(), success: true, state: "completed", durationMs: 0 };
        yield { type: "tool_finished", result, input: {} };
      },
    };
  }
  async function drain(stream: AsyncGenerator<RunEvent, ToolCallResult[]>): Promise<ToolCallResult[]> {
    for (;;) {
      const next = await stream.next();
      if (next.done) return next.value;
    }
  }
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it("chains calls per path in the given order, starts the others at once, and answers in call order", async () => {
    const log: string[] = [];
    const gates = new Map(["a1", "a2", "b1", "free"].map((name) => [name, gate()]));
    const paths: Record<string, string[]> = { a1: ["/w/a"], a2: ["/w/a", "/w/b"], b1: ["/w/b"], free: [] };
    const results = drain(runToolCalls(["a1", "a2", "b1", "free"].map(call), executor(log, gates), (c) => paths[c.id]!));
    await settle();
    expect(log).toEqual(["start a1", "start free"]);
    gates.get("free")!.open();
    gates.get("a1")!.open();
    await settle();
    expect(log).toEqual(["start a1", "start free", "end free", "end a1", "start a2"]);
    gates.get("a2")!.open();
    gates.get("b1")!.open();
    expect((await results).map((r) => r.output)).toEqual(["A1", "A2", "B1", "FREE"]);
    expect(log.slice(-3)).toEqual(["end a2", "start b1", "end b1"]);
  });

  it("a call that ended without a result is answered, and the next one on its path still runs", async () => {
    const log: string[] = [];
    const results = await drain(runToolCalls(["x", "y"].map(call), executor(log, new Map(), ["x"]), () => ["/w/same"]));
    expect(log).toEqual(["start x", "end x", "start y", "end y"]);
    expect(results[0]!.state).toBe("error");
    expect(results[1]!.output).toBe("Y");
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";

let h: RuntimeHarness | undefined;
let llm: FakeLlm | undefined;
afterEach(async () => {
  await h?.close();
  await llm?.close();
  h = undefined;
  llm = undefined;
});

/** Arguments a model has been seen to send: cut off, trailing garbage, not an object, empty. */
const MALFORMED: { args: string; finish: "length" | "tool_calls" }[] = [
  { args: '{"command":"echo $(', finish: "length" },
  { args: '{"command":"echo $(', finish: "tool_calls" },
  { args: '{"command":"echo hi"', finish: "tool_calls" },
  { args: '{"command":"unterminated', finish: "length" },
  { args: `{"file":"big.txt","content":"${"x".repeat(5000)}`, finish: "length" },
  { args: '{"command":"echo hi"}}', finish: "tool_calls" },
  { args: '{"command":"echo hi"} trailing words', finish: "tool_calls" },
  { args: "[1]", finish: "tool_calls" },
  { args: '"x"', finish: "tool_calls" },
  { args: "null", finish: "tool_calls" },
  { args: "42", finish: "tool_calls" },
  { args: "", finish: "tool_calls" },
  { args: "{'command': 'single quotes'}", finish: "tool_calls" },
  { args: '{"command": NaN}', finish: "tool_calls" },
  { args: '{"command":"\\u12"}', finish: "tool_calls" },
  { args: "{", finish: "length" },
];

async function json(response: Response): Promise<any> {
  return response.json();
}

describe("tool calls whose arguments are not a JSON object", () => {
  it("never go back to the provider: a strict provider answers every later chat (0 failures over many malformed calls)", async () => {
    llm = await startFakeLlm({ strictToolArguments: true });
    h = await createRuntimeHarness({ llm });
    const server = await h.serve();
    const session = await json(await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "default" }) }));

    const failures: string[] = [];
    for (const [i, { args, finish }] of MALFORMED.entries()) {
      const tool = i % 2 === 0 ? "bash" : "write_file";
      llm.enqueue(reply().text(`calling ${i}`).rawToolCall(tool, args, { id: `call_malformed_${i}` }).finish(finish).stop());
      llm.enqueue(reply().text(`recovered ${i}`).stop());
      // A chat with no tool call between two malformed ones: the history from the store is replayed.
      llm.enqueue(reply().text(`plain ${i}`).stop());
      for (const [message, expected] of [
        [`malformed ${i}`, `recovered ${i}`],
        [`plain ${i}`, `plain ${i}`],
      ] as const) {
        const answer = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message }) });
        const body = await json(answer);
        if (answer.status !== 200 || body.content !== expected) failures.push(`${message} (${JSON.stringify(args).slice(0, 40)}): ${answer.status} ${JSON.stringify(body).slice(0, 300)}`);
      }
    }
    expect(failures).toEqual([]);
    expect(llm.refusedToolArguments).toHaveLength(0);
    expect(llm.completionRequests).toHaveLength(MALFORMED.length * 3);

    // The store keeps what the model wrote; no call was run; each result says what was wrong.
    const calls = await h.runtime.store.listToolCalls(session.id);
    expect(calls.map((c) => c.arguments)).toEqual(MALFORMED.map(({ args }) => (args === "" ? "{}" : args)));
    expect(calls.every((c) => c.state === "error")).toBe(true);
    const results = (await h.runtime.store.listMessages(session.id)).filter((m) => m.role === "tool").map((m) => m.content ?? "");
    for (const [i, { args, finish }] of MALFORMED.entries()) {
      if (finish === "length") expect(results[i]).toMatch(/^Error: OUTPUT_TRUNCATED — .*was not run/);
      else if (args === "") expect(results[i]).toMatch(/^Error: VALIDATION_ERROR — /); // {} lacks the required fields
      else expect(results[i]).toMatch(/^Error: VALIDATION_ERROR — arguments are not (valid JSON|a JSON object) \(.*\), so the call was not run; the conversation shows them as \{\}\. You sent: /);
    }
  });

  it("go on the wire as {} with the error in the result, within the run and from the stored history", async () => {
    h = await createRuntimeHarness();
    h.llm.enqueue(reply().rawToolCall("bash", '{"command":"echo $(', { id: "call_cut" }).finish("length").stop());
    h.llm.enqueue(reply().rawToolCall("bash", '{"command":"ls"} }', { id: "call_garbage" }).tool("log_write", { message: "fine" }).stop());
    h.llm.enqueue(reply().text("done").stop());
    h.llm.enqueue(reply().text("again").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    expect((await (await h.runtime.sessions.send(session.id, "go")).result).content).toBe("done");
    expect((await (await h.runtime.sessions.send(session.id, "more")).result).content).toBe("again");

    for (const request of h.llm.completionRequests.slice(1)) {
      const calls = request.body.messages.filter((m: { role: string }) => m.role === "assistant").flatMap((m: { tool_calls?: unknown[] }) => m.tool_calls ?? []);
      expect(calls.map((c: { function: { arguments: string } }) => c.function.arguments)).toEqual(
        request === h.llm.completionRequests[1] ? ["{}"] : ["{}", "{}", JSON.stringify({ message: "fine" })],
      );
    }
    const last = h.llm.completionRequests[3]!.body.messages;
    const tools = last.filter((m: { role: string }) => m.role === "tool").map((m: { content: string }) => m.content);
    expect(tools[0]).toMatch(/^Error: OUTPUT_TRUNCATED/);
    expect(tools[1]).toContain('You sent: {"command":"ls"} }');
    expect(tools[2]).toBe("fine");
    const stored = await h.runtime.store.listToolCalls(session.id);
    expect(stored.map((c) => c.arguments)).toEqual(['{"command":"echo $(', '{"command":"ls"} }', JSON.stringify({ message: "fine" })]);
  });
});

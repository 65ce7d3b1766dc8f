import { describe, expect, it } from "vitest";
import { toWireMessages } from "../../../src/llm/openai-compatible/to-wire.js";
import { parseToolArguments, wireToolArguments } from "../../../src/llm/tool-arguments.js";
import type { LlmMessage } from "../../../src/llm/types.js";

const assistantWith = (...args: string[]): LlmMessage => ({
  role: "assistant",
  content: null,
  toolCalls: args.map((a, i) => ({ id: `c${i}`, name: "bash", arguments: a })),
});

describe("tool-call arguments on the wire", () => {
  it("sends arguments that hold a JSON object as written, and {} for anything else", () => {
    const valid = ['{"command":"ls"}', ' { "command" : "ls" } ', "{}", '{"nested":{"a":[1,2]}}'];
    const invalid = ['{"command":"echo $(', '{"a":1}}', '{"a":1} tail', "[1]", '"x"', "null", "42", "true", "", "   ", "{'a':1}", '{"a":NaN}'];
    const [wire] = toWireMessages([assistantWith(...valid, ...invalid)]);
    const sent = (wire as { tool_calls: { function: { arguments: string } }[] }).tool_calls.map((c) => c.function.arguments);
    expect(sent).toEqual([...valid, ...invalid.map(() => "{}")]);
    for (const text of sent) expect(typeof JSON.parse(text)).toBe("object");
  });

  it("says what is wrong with arguments that are not an object", () => {
    expect(parseToolArguments('{"a":')).toMatchObject({ ok: false, problem: expect.stringMatching(/^not valid JSON \(/) });
    expect(parseToolArguments("[1]")).toEqual({ ok: false, problem: "not a JSON object (an array)" });
    expect(parseToolArguments('"x"')).toEqual({ ok: false, problem: "not a JSON object (a string)" });
    expect(parseToolArguments("null")).toEqual({ ok: false, problem: "not a JSON object (null)" });
    expect(parseToolArguments("")).toEqual({ ok: true, value: {} });
    expect(wireToolArguments('{"a":1}')).toBe('{"a":1}');
  });
});

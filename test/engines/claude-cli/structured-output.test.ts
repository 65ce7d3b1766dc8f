/**
 * CLAUDE ENGINE TESTS: an output schema runs as the SDK's own structured output (its
 * StructuredOutput tool, real `claude` binary against the fake Anthropic server). Repair
 * requests here are the SDK's: the error result of a StructuredOutput call that does not
 * match, and its reminder to call the tool after a text answer.
 */
import { afterEach, describe, expect, it } from "vitest";
import { compileOutputSchema } from "../../../src/engines/output-schema.js";
import { message } from "../../helpers/fake-anthropic.js";
import { createEngineHarness, type EngineHarness } from "./harness.js";

let h: EngineHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const SCHEMA = { type: "object", properties: { count: { type: "integer" }, files: { type: "array", items: { type: "string" } } }, required: ["count", "files"], additionalProperties: false };
const output = compileOutputSchema(SCHEMA, "output_schema");

async function rows(): Promise<{ role: string; content: string | null; meta: any; tool_calls: any }[]> {
  return (await h!.store.listMessages(h!.sessionId)) as never;
}

describe("claude-cli engine: output schema", () => {
  it("passes the schema as the SDK's outputFormat; Veil tools run first, the StructuredOutput call's input is the answer (no repair)", async () => {
    h = await createEngineHarness({ files: { "a.txt": "1", "b.txt": "2" } });
    h.api.enqueue(
      message().tool("mcp__veil__bash", { command: "ls *.txt" }).stop(),
      message().text("Done.").tool("StructuredOutput", { count: 2, files: ["a.txt", "b.txt"] }).stop(),
    );
    const outcome = await h.turn("which txt files are here?", { outputSchema: output });
    expect(outcome.error).toBeUndefined();
    expect(outcome.result).toMatchObject({ stopReason: "stop", structured: { count: 2, files: ["a.txt", "b.txt"] } });
    expect(JSON.parse(outcome.result.content!)).toEqual({ count: 2, files: ["a.txt", "b.txt"] });

    const first = h.api.messageRequests[0]!.body;
    const tool = first.tools.find((t: { name: string }) => t.name === "StructuredOutput");
    expect(tool.input_schema).toEqual(SCHEMA);
    expect(JSON.stringify(first.system)).toContain("StructuredOutput tool");
    expect(JSON.stringify(h.api.messageRequests[1]!.body.messages)).toContain("a.txt");

    const stored = await rows();
    expect(stored.map((r) => r.role)).toEqual(["user", "assistant", "tool", "assistant", "tool"]);
    expect(stored[3]!.tool_calls[0].name).toBe("StructuredOutput");
    expect(stored[4]!.content).toContain("Structured output provided successfully");
    expect(stored.filter((r) => r.meta?.source === "output_schema")).toHaveLength(0);
    const done = h.wire.find((e) => e.type === "chat.done") as any;
    expect(done.structured).toEqual({ count: 2, files: ["a.txt", "b.txt"] });
  });

  it("the StructuredOutput call's result is stored when the SDK's result message comes before the run took the call's message", async () => {
    // The SDK's messages as the engine reads them: the run's consumer is held at the call's
    // message until the SDK has handed over its result (a busy store does this by itself).
    let resultRead!: () => void;
    const sdkResult = new Promise<void>((resolve) => (resultRead = resolve));
    const importSdk = async () => {
      const sdk = (await import("@anthropic-ai/claude-agent-sdk")) as typeof import("@anthropic-ai/claude-agent-sdk");
      const query: typeof sdk.query = (args) => {
        const q = sdk.query(args);
        const messages = { [Symbol.asyncIterator]: q[Symbol.asyncIterator].bind(q) };
        q[Symbol.asyncIterator] = async function* () {
          for await (const m of messages) {
            if (m.type === "result") resultRead();
            yield m;
          }
        };
        return q;
      };
      return { ...sdk, query };
    };
    h = await createEngineHarness({ importSdk });
    h.api.enqueue(message().tool("StructuredOutput", { count: 1, files: ["x"] }).stop());
    const outcome = await h.turn("count them", {
      outputSchema: output,
      onEvent: async (event) => {
        if (event.type === "assistant_message" && event.message.toolCalls.some((c) => c.name === "StructuredOutput")) await sdkResult;
      },
    });
    expect(outcome.result).toMatchObject({ stopReason: "stop", structured: { count: 1, files: ["x"] } });
    const stored = await rows();
    expect(stored.map((r) => r.role)).toEqual(["user", "assistant", "tool"]);
    expect(stored[2]!.content).toContain("Structured output provided successfully");
    expect(outcome.events.map((e) => e.type).slice(-3)).toEqual(["tool_finished", "structured_output", "run_ended"]);
  });

  it("a StructuredOutput call that does not match gets the SDK's error back; the next one is taken (one repair)", async () => {
    h = await createEngineHarness();
    h.api.enqueue(message().tool("StructuredOutput", { count: "two" }).stop(), message().tool("StructuredOutput", { count: 0, files: [] }).stop());
    const outcome = await h.turn("count them", { outputSchema: output });
    expect(outcome.result.structured).toEqual({ count: 0, files: [] });
    const repair = JSON.stringify(h.api.messageRequests[1]!.body.messages.at(-1));
    expect(repair).toContain("does not match required schema");
    const stored = await rows();
    expect(stored.filter((r) => r.role === "tool").map((r) => r.content)).toEqual([expect.stringContaining("does not match"), expect.stringContaining("provided successfully")]);
  });

  it("a text answer gets the SDK's reminder, stored as a repair request", async () => {
    h = await createEngineHarness();
    h.api.enqueue(message().text("There are none.").stop(), message().tool("StructuredOutput", { count: 0, files: [] }).stop());
    const outcome = await h.turn("count them", { outputSchema: output });
    expect(outcome.result.structured).toEqual({ count: 0, files: [] });
    const repairs = (await rows()).filter((r) => r.role === "user" && r.meta?.source === "output_schema");
    expect(repairs).toHaveLength(1);
    expect(repairs[0]!.content).toContain("StructuredOutput");
  });

  it("fails with OUTPUT_SCHEMA_MISMATCH when the SDK's retries run out (three attempts: two repairs), keeping the last one", async () => {
    h = await createEngineHarness();
    h.api.respond(() => message().tool("StructuredOutput", { count: -1.5 }).stop());
    const outcome = await h.turn("count them", { outputSchema: output });
    expect(outcome.stopReason).toBe("error");
    expect(outcome.error?.code).toBe("OUTPUT_SCHEMA_MISMATCH");
    expect(outcome.result.content).toBe('{"count":-1.5}');
    expect(outcome.result.structured).toBeUndefined();
    expect(h.api.messageRequests).toHaveLength(3);
    expect(JSON.stringify(h.api.messageRequests[2]!.body.messages.at(-1))).toContain("does not match required schema");
    const done = h.wire.find((e) => e.type === "chat.done") as any;
    expect(done).toMatchObject({ stopReason: "error", error: { code: "OUTPUT_SCHEMA_MISMATCH" }, content: '{"count":-1.5}' });
  });

  it("text twice: the SDK ends without the tool; Veil checks the text itself and fails it when it is not the JSON", async () => {
    h = await createEngineHarness();
    h.api.respond(() => message().text("I would rather not.").stop());
    const outcome = await h.turn("count them", { outputSchema: output });
    expect(outcome.error?.code).toBe("OUTPUT_SCHEMA_MISMATCH");
    expect(outcome.error?.message).toContain("not valid JSON");
    expect(outcome.result.content).toBe("I would rather not.");
    expect(h.api.messageRequests).toHaveLength(2);
  });
});

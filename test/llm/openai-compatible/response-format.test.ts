import { describe, expect, it } from "vitest";
import { responseFormat, structuredOutputFor } from "../../../src/llm/openai-compatible/response-format.js";

const SCHEMA = { type: "object", properties: { n: { type: "integer" } } };
const output = (repair: boolean) => ({ name: "out", schema: SCHEMA, repair });
const TOOLS = [{ name: "bash", description: "run", parameters: { type: "object" } }];
const FORMAT = { type: "json_schema", json_schema: { name: "out", schema: SCHEMA } };

describe("structuredOutputFor", () => {
  it('is "with-tools" for api.openai.com, "without-tools" elsewhere, the setting when given', () => {
    expect(structuredOutputFor({ baseUrl: "https://api.openai.com/v1" })).toBe("with-tools");
    expect(structuredOutputFor({ baseUrl: "https://API.OpenAI.com./v1" })).toBe("with-tools");
    expect(structuredOutputFor({ baseUrl: "https://openrouter.ai/api/v1" })).toBe("without-tools");
    expect(structuredOutputFor({ baseUrl: "http://127.0.0.1:8000/v1" })).toBe("without-tools");
    expect(structuredOutputFor({ baseUrl: "not a url" })).toBe("without-tools");
    expect(structuredOutputFor({ baseUrl: "https://api.openai.com/v1", structuredOutput: "none" })).toBe("none");
    expect(structuredOutputFor({ baseUrl: "http://127.0.0.1:8000/v1", structuredOutput: "with-tools" })).toBe("with-tools");
  });
});

describe("responseFormat", () => {
  it("sends nothing without an output schema or under \"none\"", () => {
    expect(responseFormat({ tools: TOOLS }, "with-tools")).toEqual({ keepTools: true });
    expect(responseFormat({ tools: TOOLS, outputSchema: output(true) }, "none")).toEqual({ keepTools: true });
  });

  it('"with-tools": the format on every call, tools kept', () => {
    expect(responseFormat({ tools: TOOLS, outputSchema: output(false) }, "with-tools")).toEqual({ format: FORMAT, keepTools: true });
    expect(responseFormat({ tools: TOOLS, outputSchema: output(true) }, "with-tools")).toEqual({ format: FORMAT, keepTools: true });
  });

  it('"without-tools": a call with tools goes without the format, a repair without its tools and with the format, a call without tools with it', () => {
    expect(responseFormat({ tools: TOOLS, outputSchema: output(false) }, "without-tools")).toEqual({ keepTools: true });
    expect(responseFormat({ tools: TOOLS, outputSchema: output(true) }, "without-tools")).toEqual({ format: FORMAT, keepTools: false });
    expect(responseFormat({ tools: [], outputSchema: output(false) }, "without-tools")).toEqual({ format: FORMAT, keepTools: true });
  });
});

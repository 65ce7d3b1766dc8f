import { describe, expect, it } from "vitest";
import { Type } from "../../src/schema.js";
import { sharedValidators } from "../../src/base/validation.js";
import { modelSchema } from "../../src/tools/model-schema.js";

const Full = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 10, description: "who" }),
    level: Type.Optional(Type.Union([Type.Literal("info"), Type.Literal("warn")], { description: "how loud" })),
    cap: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
    time: Type.Union([Type.String(), Type.Number()]),
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: 5 })),
    either: Type.Optional(Type.Union([Type.String({ description: "a" }), Type.Integer({ description: "b" })])),
  },
  { additionalProperties: false },
);

describe("modelSchema: what the model is shown of a built-in's schema", () => {
  it("writes constants as an enum, nullable and multi-type unions as a type list, and drops validator-only keywords", () => {
    expect(modelSchema(Full as Record<string, unknown>)).toEqual({
      type: "object",
      properties: {
        name: { description: "who", type: "string" },
        level: { description: "how loud", type: "string", enum: ["info", "warn"] },
        cap: { type: ["integer", "null"] },
        time: { type: ["string", "number"] },
        count: { maximum: 5, type: "integer" },
        either: { anyOf: [{ description: "a", type: "string" }, { description: "b", type: "integer" }] },
      },
      required: ["name", "time"],
    });
  });

  it("accepts exactly the values the full schema accepts for the rewritten unions", () => {
    const full = sharedValidators.compile(Full as Record<string, unknown>);
    const shown = sharedValidators.compile(modelSchema(Full as Record<string, unknown>));
    const inputs = [
      { name: "a", time: "5m", level: "warn", cap: null },
      { name: "a", time: 3, cap: 7 },
      { name: "a", time: true },
      { name: "a", time: "1", level: "loud" },
      { name: "a", time: "1", cap: "x" },
    ];
    for (const input of inputs) expect(shown(input) === null, JSON.stringify(input)).toBe(full(input) === null);
  });

  it("leaves the full schema untouched", () => {
    const before = JSON.stringify(Full);
    modelSchema(Full as Record<string, unknown>);
    expect(JSON.stringify(Full)).toBe(before);
  });
});

import { Type } from "../../schema.js";
import { defineTool } from "../define.js";

const Params = Type.Object(
  {
    message: Type.String({ minLength: 1 }),
    level: Type.Optional(Type.Union([Type.Literal("info"), Type.Literal("warn"), Type.Literal("error")], { description: '"info" (default)' })),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
);

/** Progress log: recorded in the audit table and the server log, echoed back to the model. */
export const logWrite = defineTool({
  name: "log_write",
  description: "Write a progress log entry (echoed back).",
  params: Params,
  readOnly: true,
  async execute(input, ctx) {
    const level = input.level ?? "info";
    ctx.log[level](input.message, { sessionId: ctx.sessionId, source: "log_write", ...(input.metadata ? { metadata: input.metadata } : {}) });
    await ctx.audit("log_write", { level, message: input.message, metadata: input.metadata ?? null });
    return { output: input.message, details: { level } };
  },
});

import { Type } from "../../schema.js";

/** `{ effort, max_tokens? }`, shared by agent_spawn overrides and agent_control update-session. */
export const ReasoningSchema = Type.Object(
  {
    effort: Type.Union([Type.Literal("none"), Type.Literal("minimal"), Type.Literal("low"), Type.Literal("medium"), Type.Literal("high"), Type.Literal("xhigh")]),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
  },
);

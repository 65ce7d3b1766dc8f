import { Type } from "../../schema.js";
import { ToolError } from "../../errors.js";
import { defineTool } from "../define.js";
import { sessionToolset } from "./tool-search.js";

const Params = Type.Object(
  {
    name: Type.String({ description: "Exact tool name (from tool_search)" }),
  },
  { additionalProperties: false },
);

/**
 * Tier 4: puts a custom tool's schema into tools[] from the next model call on.
 * On purpose (and said in the README): a tool the agent's mode does not allow answers
 * PERMISSION_DENIED instead of a false `{ activated }`.
 */
export const toolActivate = defineTool({
  name: "tool_activate",
  description:
    "Make a custom tool callable (load into active tool list) from the next call on.",
  params: Params,
  async execute(input, ctx) {
    const result = await sessionToolset(ctx).activate(input.name);
    if (!result.ok) throw new ToolError(result.code, result.message);
    return { output: JSON.stringify({ activated: result.name }), details: { name: result.name, already: result.already } };
  },
});

import type { TSchema } from "../schema.js";
import type { RegisteredTool, ToolDefinition } from "./types.js";
import { sharedValidators } from "../base/validation.js";
import { modelSchema } from "./model-schema.js";

const TOOL_NAME = /^[a-z][a-z0-9_]*$/;

/** Declares a built-in tool; compiles its schema once and checks the name. */
export function defineTool<S extends TSchema>(definition: ToolDefinition<S>): RegisteredTool {
  if (!TOOL_NAME.test(definition.name)) throw new Error(`tool name "${definition.name}" must be snake_case`);
  const inputSchema = JSON.parse(JSON.stringify(definition.params)) as Record<string, unknown>;
  return {
    name: definition.name,
    description: definition.description,
    inputSchema,
    modelSchema: modelSchema(inputSchema),
    timeoutMs: definition.timeoutMs,
    readOnly: definition.readOnly ?? false,
    tier: "builtin",
    validate: lazyValidator(inputSchema),
    execute: definition.execute as RegisteredTool["execute"],
    ...(definition.touches ? { touches: definition.touches as RegisteredTool["touches"] } : {}),
    ...(definition.warmUp ? { warmUp: definition.warmUp } : {}),
    ...(definition.reaches ? { reaches: definition.reaches as RegisteredTool["reaches"] } : {}),
  };
}

/** Compiles on first use: start-up (and `veil run` cold start) pays only for tools actually called. */
function lazyValidator(schema: Record<string, unknown>): (input: unknown) => string | null {
  let compiled: ((input: unknown) => string | null) | undefined;
  return (input) => (compiled ??= sharedValidators.compile(schema))(input);
}

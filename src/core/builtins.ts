import { builtinTools } from "../tools/builtin/index.js";
import type { RegisteredTool } from "../tools/types.js";
import { agentControl } from "./agents/tools/agent-control.js";
import { agentMessage } from "./agents/tools/agent-message.js";
import { agentSpawn } from "./agents/tools/agent-spawn.js";

/** The 24 built-in tools, in their documented order. */
export function allBuiltinTools(): RegisteredTool[] {
  return builtinTools([agentSpawn, agentMessage, agentControl]);
}

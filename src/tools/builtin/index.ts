import type { RegisteredTool } from "../types.js";
import { logWrite } from "./log-write.js";
import { sleep } from "./sleep.js";

/** Every built-in tool (tier 1). Each issue adds its tools here. */
export function builtinTools(): RegisteredTool[] {
  return [logWrite, sleep];
}

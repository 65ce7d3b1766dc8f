import { estimateTextTokens } from "./tokens.js";

const MAX_ARGS_SHOWN = 300;

/**
 * What the model sees instead of a pruned tool output: what it was, how big, and how to
 * get it back — calling the tool again, with read_file's offset/limit for the part needed,
 * and a warning not to repeat commands that change things.
 */
export function prunedToolStub(toolName: string, argumentsJson: string, output: string): string {
  const args = argumentsJson.length > MAX_ARGS_SHOWN ? `${argumentsJson.slice(0, MAX_ARGS_SHOWN)}…` : argumentsJson;
  const call = args ? `${toolName} ${args}` : toolName;
  const how =
    toolName === "read_file"
      ? "Call read_file again if you need it (offset/limit read just the lines you need)."
      : toolName === "bash"
        ? "If you need it, re-run the command only if it has no side effects; otherwise inspect its results (files, state) directly."
        : "Call the tool again if you need it.";
  return `[Output pruned to save context: ${call} returned about ${estimateTextTokens(output)} tokens, no longer shown. ${how}]`;
}

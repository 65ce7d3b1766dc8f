import type { Clock } from "../base/clock.js";
import type { AgentConfig, ModelInfo, Settings, VeilPaths } from "../config/types.js";
import type { Logger, ResourceScope, ToolContext, ToolServices, ToolWrites } from "../tools/types.js";

/** What every call of one session's turn shares (a run's, or `veil mcp`'s session). */
export interface ToolTurn {
  sessionId: string;
  agent: AgentConfig;
  mode: string;
  paths: VeilPaths;
  settings: Settings;
  modelKey: string;
  model: ModelInfo;
  clock: Clock;
  session: ResourceScope;
  runtime: ResourceScope;
  services: ToolServices;
  log: Logger;
}

/**
 * The one place a ToolContext is made: the turn's facts, the call's id and signal, and the
 * writes the session's writer allows that call (its side tables and events, through the
 * run's fenced store). Nothing else of the runtime reaches a tool.
 */
export function buildToolContext(turn: ToolTurn, call: { id: string }, signal: AbortSignal, writes: ToolWrites): ToolContext {
  return {
    ...turn,
    workspace: turn.paths.workspace,
    toolCallId: call.id,
    signal,
    ...writes,
  };
}

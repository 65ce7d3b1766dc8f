import type { AgentConfig, Budget, ModelInfo, ReasoningConfig, VeilConfig } from "../config/types.js";
import { VeilError } from "../errors.js";
import { modelInfo, pickModelKey } from "../llm/models.js";
import type { LlmMessage } from "../llm/types.js";
import type { MessageRow, SessionRow, Store } from "../store/store.js";
import { resolveCompaction } from "./compaction/settings.js";
import type { ContextTurn } from "./compaction/session-context.js";
import { SessionToolset, type CustomToolSource } from "../tools/registry.js";
import type { Logger, RegisteredTool, ToolContext, ToolOutcome, ToolServices } from "../tools/types.js";
import type { Clock } from "../base/clock.js";
import { buildSessionBrief, buildSystemPrompt, rowsToMessages } from "./context-builder.js";
import type { EventSink } from "../base/events.js";
import type { IdGenerator } from "../base/ids.js";
import type { SessionWriter } from "./session-writer.js";
import { buildToolContext, type ToolTurn } from "./tool-context.js";
import type { Resources } from "./resources.js";
import type { ChangeWatch } from "./change-watch.js";
import { resolveBudget } from "../engines/stop-conditions.js";
import type { OutputSchema } from "../engines/output-schema.js";
import type { SkillSource } from "../tools/skills/source.js";
import { withSkillTool } from "../tools/skills/skill-tool.js";
import { instructionsSection, type InstructionFile } from "./instructions/project.js";
import { nestedInstructions } from "./instructions/nested.js";
import { sessionApprovals, type ApprovalGate } from "./approvals.js";

export interface RunSetupDeps {
  config: VeilConfig;
  store: Store;
  events: EventSink;
  clock: Clock;
  ids: IdGenerator;
  log: Logger;
  builtins: readonly RegisteredTool[];
  customTools: CustomToolSource;
  runtimeResources: Resources;
  /** Shared services handed to tools (wakeups, remote methods, sessions, selfAddress…). */
  services: ToolServices;
  /** Agents are re-read per session so new agent folders show up without a restart. */
  /** The agents known now; naming one not among them re-reads the agent folders at once. */
  agents(wanted?: string): Record<string, AgentConfig>;
  /** Skills of an agent (re-read on change). */
  skills?: SkillSource;
  /** The global and project AGENTS.md files (re-read on change). */
  instructions?: () => InstructionFile[];
  /** Whether the engine of a model key registers every custom tool up front (see Engine.toolsUpFront). */
  toolsUpFront?(modelKey: string): boolean;
}

/** Everything one turn needs, resolved once at its start. */
export interface PreparedRun {
  agent: AgentConfig;
  modelKey: string;
  model: ModelInfo;
  reasoning: ReasoningConfig | null;
  toolset: SessionToolset;
  /** The session's stored rows at the start of the turn. */
  rows: MessageRow[];
  /** The model's view of the rows (compaction applied), without the system prompt. */
  history: LlmMessage[];
  systemPrompt: string;
  /** A sub-agent's objective and success criteria, sent after the system prompt ("" for none). */
  sessionBrief: string;
  /** What compaction needs of this turn. */
  context: ContextTurn;
  /** Asked before every model call; update-session budget changes apply at once (see budgetReader). */
  budget(): Promise<Budget>;
  makeContext(call: { id: string; name: string }, signal: AbortSignal): ToolContext;
  /** Appends a reached folder's AGENTS.md to a file tool's result (absent for agents without instructions). */
  annotate?(tool: RegisteredTool, input: Record<string, unknown>, outcome: ToolOutcome): Promise<ToolOutcome>;
  /** The calls that wait for approval (absent when the agent's approval list is empty). */
  approvals?: ApprovalGate;
  /** The final answer must match it (the message that started the run asked for it). */
  outputSchema?: OutputSchema;
}

/**
 * Resolves a turn: the agent, the model (per-call > session > agent > settings),
 * the session's tools (custom tools re-discovered), the history and the system prompt.
 */
export async function prepareRun(
  deps: RunSetupDeps,
  session: SessionRow,
  perCall: { model?: string; reasoning?: ReasoningConfig; outputSchema?: OutputSchema; warmUp?: boolean },
  sessionResources: Resources,
  writer: SessionWriter,
  budgetWatch?: ChangeWatch,
): Promise<PreparedRun> {
  const { config, store, clock, log } = deps;
  const id = session.id;
  const agent = deps.agents(session.agent)[session.agent];
  if (!agent) throw new VeilError("AGENT_NOT_FOUND", `agent "${session.agent}" of session ${id} no longer exists`);
  const modelKey = pickModelKey({ perCall: perCall.model, session: session.model, agent: agent.model, settings: config.settings });
  const model = modelInfo(modelKey, config.models);
  const custom = await deps.customTools.discover(agent);
  const skills = deps.skills?.discover(agent).skills ?? [];
  const builtins = withSkillTool(deps.builtins, skills);
  // The toolset stores what the model activated through the run's writer (fenced on a cluster).
  const toolset = await SessionToolset.create({ builtins, custom, agent, mode: session.mode, sessionId: id, store: writer.store, log, skills, config });
  if (deps.toolsUpFront?.(modelKey)) toolset.registerAllUpFront();
  const rows = await store.listMessages(id);
  const history = rowsToMessages(rows);
  const useInstructions = agent.instructions !== false;
  const instructions = useInstructions && deps.instructions ? instructionsSection(deps.instructions()) : "";
  const systemPrompt = buildSystemPrompt({ agent, session, workspace: config.paths.workspace, toolSummary: toolset.summary(), instructions });
  const sessionBrief = buildSessionBrief(session);
  const nested = useInstructions ? nestedInstructions(sessionResources, { workspace: config.paths.workspace, sessionId: id }) : null;
  const services: ToolServices = { ...deps.services, toolset };
  const toolTurn: ToolTurn = { sessionId: id, agent, mode: session.mode, paths: config.paths, settings: config.settings, modelKey, model, clock, session: sessionResources, runtime: deps.runtimeResources, services, log };
  const approvals = sessionApprovals(config.settings, agent, id, services.remoteMethods);
  const prepared: PreparedRun = {
    agent,
    modelKey,
    model,
    reasoning: perCall.reasoning ?? session.reasoning ?? agent.reasoning ?? null,
    toolset,
    rows,
    history,
    systemPrompt,
    sessionBrief,
    context: contextTurn(config, agent, modelKey, model, systemPrompt, sessionBrief),
    // What it gave is marked through the run's writer, like the rest of the run.
    ...(nested ? { annotate: (tool: RegisteredTool, input: Record<string, unknown>, outcome: ToolOutcome) => nested.annotate(tool, input, outcome, writer.store) } : {}),
    ...(approvals ? { approvals } : {}),
    ...(perCall.outputSchema ? { outputSchema: perCall.outputSchema } : {}),
    budget: budgetReader(session, budgetWatch, async () => (await store.getSession(id))?.budget_override ?? null, (override) =>
      resolveBudget(config.settings.budget, agent.budget, override),
    ),
    makeContext: (call, signal) => buildToolContext(toolTurn, call, signal, writer.toolWrites(call)),
  };
  if (perCall.warmUp !== false) toolset.prepareWarmUp((call) => prepared.makeContext(call, new AbortController().signal));
  return prepared;
}

/**
 * The run's budget before each model call. The session's budget_override is the part that
 * changes during a run (agent_control update-session); it is read from the row the run
 * started with, and read again only when the watch says it changed or its recheck interval
 * passed, so a step costs no session read. Without a watch every call reads it.
 */
function budgetReader(
  session: SessionRow,
  watch: ChangeWatch | undefined,
  read: () => Promise<Budget | null>,
  resolve: (override: Budget | null) => Budget,
): () => Promise<Budget> {
  let override = session.budget_override;
  return async () => {
    if (!watch || watch.mustRead()) override = await read();
    return resolve(override);
  };
}

/** The turn's compaction inputs: settings (agent over defaults), the model's and the summarizer's windows. */
export function contextTurn(config: VeilConfig, agent: AgentConfig, modelKey: string, model: ModelInfo, systemPrompt: string, sessionBrief: string, signal?: AbortSignal): ContextTurn {
  const settings = resolveCompaction(config.settings, agent, modelKey);
  return {
    systemPrompt,
    ...(sessionBrief ? { sessionBrief } : {}),
    modelKey,
    contextWindow: model.context_window,
    settings,
    summarizerWindow: modelInfo(settings.summarizerModel, config.models).context_window,
    ...(signal ? { signal } : {}),
  };
}

import { Type } from "../../../schema.js";
import { ownEntry } from "../../../config/dictionary.js";
import type { ReasoningConfig } from "../../../config/types.js";
import type { SessionManager } from "../../session-manager.js";
import { resolveBudget } from "../../../engines/stop-conditions.js";
import { noteContactMessage, recordContact } from "../counters.js";
import { asyncNotice, DEFAULT_SYNC_TIMEOUT_SECONDS, wrapAgentMessage } from "../messages.js";
import { ReasoningSchema } from "../schemas.js";
import { multiAgent } from "../service.js";
import { ToolError, isVeilError } from "../../../errors.js";
import type { SessionRow } from "../../../store/store.js";
import { defineTool } from "../../../tools/define.js";
import { xmlEnvelope } from "../../../tools/format.js";

const LEGACY_KEYS: Record<string, string> = {
  budget_override:
    'per-spawn "budget_override" is no longer accepted by agent_spawn. Spawn first, then call agent_control { sessionId, action: "update-session", params: { budget_override: { max_tokens, max_wall_seconds, max_spawn_depth } } }, or set limits in the agent\'s agent.json / settings.budget',
  thinking:
    '"thinking" is no longer accepted by agent_spawn. Use overrides: { reasoning: { effort, max_tokens? } }, or later agent_control { action: "update-session", params: { reasoning: {...} } }',
  effort:
    'a bare "effort" is no longer accepted by agent_spawn. Use overrides: { reasoning: { effort } }, or later agent_control { action: "update-session", params: { reasoning: {...} } }',
};

const Params = Type.Object({
  agent: Type.String({ minLength: 1 }),
  instance_name: Type.String({ minLength: 1, description: "Unique label for this subagent under the caller" }),
  objective: Type.String({ minLength: 1, description: "What this subagent should accomplish; injected into its system prompt under ## Objective" }),
  success_criteria: Type.Optional(Type.String({ description: "Completion guideline; injected under ## Success Criteria" })),
  overrides: Type.Optional(Type.Object({ reasoning: Type.Optional(ReasoningSchema) }, { description: "Per-spawn LLM config (reasoning only)" })),
  initial_message: Type.Optional(
    Type.Object(
      { message: Type.String(), async_inform: Type.Optional(Type.Boolean()) },
      { description: "If absent, no LLM turn fires. async_inform: true returns at once; the reply comes later as a new user message" },
    ),
  ),
});

/**
 * agent_spawn: a child session (parent_session_id, spawn_depth + 1,
 * objective and success criteria in its system prompt), optionally seeded with a
 * first message (sync or async), under the spawn-depth guard.
 */
export const agentSpawn = defineTool({
  name: "agent_spawn",
  description:
    "Start a new chat session with a subagent, get its sessionId back.",
  params: Params,
  async execute(input, ctx) {
    refuseLegacyKeys(input as Record<string, unknown>);
    const service = multiAgent(ctx);
    const { store, settings } = service.deps;
    const agent = ownEntry(service.agents(input.agent), input.agent);
    if (!agent) {
      throw new ToolError("AGENT_NOT_FOUND", `no agent named "${input.agent}" (known agents: ${Object.keys(service.agents()).sort().join(", ")})`);
    }
    const caller = await service.session(ctx.sessionId);
    const maxDepth = resolveBudget(settings.budget, ctx.agent.budget, caller.budget_override).max_spawn_depth;
    if (maxDepth !== undefined && maxDepth !== null && caller.spawn_depth >= maxDepth) {
      throw new ToolError(
        "BUDGET_EXCEEDED",
        `spawn depth limit reached: this session is at spawn_depth ${caller.spawn_depth} and max_spawn_depth is ${maxDepth}, so it may not spawn sub-agents. ` +
          `Do the work yourself, or ask whoever runs you to raise budget.max_spawn_depth of agent "${ctx.agent.name}" (agent.json) or in settings, or on this session via agent_control update-session (remediation: edit_agent_or_caller_budget).`,
        { details: { remediation: "edit_agent_or_caller_budget", spawn_depth: caller.spawn_depth, max_spawn_depth: maxDepth } },
      );
    }
    if (await store.findChildByInstanceName(caller.id, input.instance_name)) {
      throw new ToolError("VALIDATION_ERROR", `instance_name "${input.instance_name}" is already used by a sub-agent of this session; pick another name`);
    }
    const child = await createChild(service.deps.sessions, caller, input, maxDepth);
    const now = new Date(ctx.clock.now()).toISOString();
    await recordContact(store, ctx.otherSessions, child.id, caller.id, now);
    const head: [string, string][] = [
      ["instance-name", input.instance_name],
      ["session-id", child.id],
    ];
    const details = { sessionId: child.id, instanceName: input.instance_name, agent: agent.name, spawnDepth: child.spawn_depth };
    if (!input.initial_message) return { output: xmlEnvelope(head), details };

    const content = wrapAgentMessage(ctx.agent.name, ctx.sessionId, input.initial_message.message);
    const send = { callerId: ctx.sessionId, target: child, content, fullSteps: false, meta: { source: "agent", fromSessionId: ctx.sessionId, fromAgent: ctx.agent.name, fromToolCallId: ctx.toolCallId } };
    if (input.initial_message.async_inform) {
      const sent = await service.delivery.sendAsync(send);
      await noteContactMessage(store, ctx.otherSessions, child.id, caller.id, sent.messageId);
      return { output: xmlEnvelope([...head, ["notice", asyncNotice(input.instance_name, child.id, sent.role)]]), details: { ...details, async: true } };
    }
    const reply = await service.delivery.sendSync({ ...send, timeoutMs: DEFAULT_SYNC_TIMEOUT_SECONDS * 1000, signal: ctx.signal });
    await noteContactMessage(store, ctx.otherSessions, child.id, caller.id, reply.messageId);
    return {
      output: xmlEnvelope([...head, ["finish-reason", reply.finishReason], ["content", reply.text]]),
      details: { ...details, async: false, finishReason: reply.finishReason },
    };
  },
});

type SpawnInput = { agent: string; instance_name: string; objective: string; success_criteria?: string; overrides?: { reasoning?: ReasoningConfig } };

async function createChild(sessions: SessionManager, caller: SessionRow, input: SpawnInput, maxDepth: number | undefined): Promise<SessionRow> {
  // The caller session's max_spawn_depth override is inherited, so a limit set on a parent holds for its whole tree.
  const inherited = caller.budget_override?.max_spawn_depth;
  try {
    return await sessions.create({
      agent: input.agent,
      reasoning: input.overrides?.reasoning ?? null,
      budget_override: inherited !== undefined ? { max_spawn_depth: inherited } : null,
      parent_session_id: caller.id,
      spawn_depth: caller.spawn_depth + 1,
      instance_name: input.instance_name,
      objective: input.objective,
      success_criteria: input.success_criteria ?? null,
      origin: "agent",
    });
  } catch (error) {
    if (isVeilError(error) && error.code === "CONFLICT") {
      throw new ToolError("VALIDATION_ERROR", `instance_name "${input.instance_name}" is already used by a sub-agent of this session; pick another name`);
    }
    if (isVeilError(error) && error.code === "TOO_MANY_SESSIONS") {
      throw new ToolError(
        "BUDGET_EXCEEDED",
        `cannot spawn "${input.instance_name}": ${error.message}. Stop or reuse finished sub-agents (agent_message works on idle ones) instead of spawning more.`,
        { details: { remediation: "close_sessions_or_raise_limits_maxLiveSessions", maxDepth } },
      );
    }
    throw error;
  }
}

function refuseLegacyKeys(input: Record<string, unknown>): void {
  const overrides = (input.overrides ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(LEGACY_KEYS)) {
    if (key in input || key in overrides) throw new ToolError("VALIDATION_ERROR", LEGACY_KEYS[key]!);
  }
  const unknown = Object.keys(overrides).filter((k) => k !== "reasoning");
  if (unknown.length > 0) {
    throw new ToolError("VALIDATION_ERROR", `overrides accepts only { reasoning: { effort, max_tokens? } }; unknown key(s): ${unknown.join(", ")}`);
  }
}

import { Type } from "../../../schema.js";
import type { Budget, ReasoningConfig } from "../../../config/types.js";
import { formatFullSteps } from "../messages.js";
import { ReasoningSchema } from "../schemas.js";
import { multiAgent, type MultiAgentService } from "../service.js";
import { summarizeTranscript } from "../summarizer.js";
import { ToolError } from "../../../errors.js";
import { pickModelKey } from "../../../llm/models.js";
import type { LlmClient } from "../../../llm/types.js";
import type { SessionRow } from "../../../store/store.js";
import { defineTool } from "../../../tools/define.js";
import { xmlEnvelope } from "../../../tools/format.js";
import type { ToolContext, ToolOutcome } from "../../../tools/types.js";

/** Budget keys update-session accepts; all are re-read by the running loop before every model call. */
const BUDGET_KEYS = ["max_tokens", "max_wall_seconds", "max_spawn_depth", "max_iterations"] as const;
const UPDATE_KEYS = ["reasoning", "budget_override"];

const Params = Type.Object({
  sessionId: Type.String({ minLength: 1 }),
  action: Type.Union(
    ["get-state", "get-summary", "stop", "update-session", "get-last-message"].map((a) => Type.Literal(a)),
    { description: "get-summary is a paid LLM call" },
  ),
  params: Type.Optional(
    Type.Object(
      {
        reasoning: Type.Optional(ReasoningSchema),
        budget_override: Type.Optional(
          Type.Object(Object.fromEntries(BUDGET_KEYS.map((k) => [k, Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]))]))),
        ),
        full_steps: Type.Optional(Type.Boolean()),
      },
      { description: "update-session: reasoning (next turn), budget_override (at once; null removes a cap). get-last-message: full_steps" },
    ),
  ),
});

type Action = "get-state" | "get-summary" | "stop" | "update-session" | "get-last-message";
type ControlParams = { reasoning?: ReasoningConfig; budget_override?: Record<string, number | null>; full_steps?: boolean };

/**
 * agent_control. Acts only on the caller's descendants (sessions it spawned,
 * directly or through its sub-agents).
 */
export const agentControl = defineTool({
  name: "agent_control",
  description:
    "Inspect (get-state / get-summary / get-last-message), update (reasoning / budget), or stop a subagent",
  params: Params,
  async execute(input, ctx) {
    const service = multiAgent(ctx);
    const target = await service.session(input.sessionId);
    await service.assertDescendant(ctx.sessionId, target);
    const params = (input.params ?? {}) as ControlParams;
    switch (input.action as Action) {
      case "get-state":
        return { output: xmlEnvelope(await service.stateFields(target, ctx.sessionId)), details: { sessionId: target.id, action: "get-state" } };
      case "get-summary":
        return getSummary(service, target, ctx);
      case "stop": {
        const stopped = await service.deps.sessions.cancel(target.id);
        return { output: xmlEnvelope(await service.stateFields(target, ctx.sessionId)), details: { sessionId: target.id, action: "stop", wasRunning: stopped } };
      }
      case "update-session":
        return updateSession(service, target, params, ctx);
      case "get-last-message":
        return getLastMessage(service, target, params.full_steps === true);
    }
  },
});

async function getSummary(service: MultiAgentService, target: SessionRow, ctx: ToolContext): Promise<ToolOutcome> {
  const state = await service.stateFields(target, ctx.sessionId);
  const { settings } = service.deps;
  const slot = service.summaryLimiter.take(ctx.clock.now(), settings.summarizerMaxCallsPerMinute);
  if (!slot.ok) {
    return {
      output: xmlEnvelope([...state, ["rate-limited", true], ["retry-after-ms", slot.retryAfterMs]]),
      details: { sessionId: target.id, action: "get-summary", rateLimited: true, retryAfterMs: slot.retryAfterMs },
    };
  }
  const llm = (ctx.services.llm as LlmClient | undefined) ?? service.deps.llm;
  const modelKey = pickModelKey({ perCall: settings.summarizerModel, settings });
  const rows = await service.deps.store.listMessages(target.id);
  const summary = await summarizeTranscript({ llm, modelKey, rows, objective: target.objective, signal: ctx.signal });
  await ctx.otherSessions.audit(target.id, "agent.summary", { callerId: ctx.sessionId, modelKey, usage: summary.usage });
  return {
    output: xmlEnvelope([...state, ["summary", summary.text]]),
    details: { sessionId: target.id, action: "get-summary", modelKey, usage: summary.usage },
  };
}

async function updateSession(service: MultiAgentService, target: SessionRow, params: ControlParams, ctx: ToolContext): Promise<ToolOutcome> {
  if (target.status === "closed") throw new ToolError("SESSION_CLOSED", `session ${target.id} is closed`);
  const unknown = Object.keys(params).filter((k) => !UPDATE_KEYS.includes(k));
  if (unknown.length > 0) throw new ToolError("VALIDATION_ERROR", `update-session accepts params.reasoning and params.budget_override; unknown: ${unknown.join(", ")}`);
  if (!params.reasoning && !params.budget_override) {
    throw new ToolError("VALIDATION_ERROR", "update-session needs params.reasoning { effort, max_tokens? } and/or params.budget_override { max_tokens?, max_wall_seconds?, max_spawn_depth?, max_iterations? }");
  }
  const applied: string[] = [];
  const immediately: string[] = [];
  const nextTurn: string[] = [];
  const patch: { reasoning?: ReasoningConfig; budget_override?: Budget | null } = {};
  if (params.reasoning) {
    patch.reasoning = params.reasoning;
    applied.push("reasoning");
    nextTurn.push("reasoning");
  }
  if (params.budget_override) {
    const next: Record<string, number> = { ...(target.budget_override ?? {}) };
    for (const [key, value] of Object.entries(params.budget_override)) {
      if (!(BUDGET_KEYS as readonly string[]).includes(key)) throw new ToolError("VALIDATION_ERROR", `budget_override accepts ${BUDGET_KEYS.join(", ")}; unknown: ${key}`);
      if (value === null) delete next[key];
      else next[key] = value;
      applied.push(`budget_override.${key}`);
      immediately.push(key);
    }
    patch.budget_override = Object.keys(next).length > 0 ? (next as Budget) : null;
  }
  // Written by the caller's run: refused once that run lost the caller's session.
  const row = await ctx.otherSessions.update(target.id, patch);
  if (patch.budget_override !== undefined) service.deps.sessions.budgetChanged(target.id);
  return {
    output: xmlEnvelope([
      ["session-id", row.id],
      ["instance-name", row.instance_name],
      ["applied", applied.join(", ")],
      ["applied_immediately", immediately.join(", ") || "none"],
      ["applied_next_turn", nextTurn.join(", ") || "none"],
    ]),
    details: { sessionId: row.id, action: "update-session", applied, applied_immediately: immediately, applied_next_turn: nextTurn, reasoning: row.reasoning, budget_override: row.budget_override },
  };
}

async function getLastMessage(service: MultiAgentService, target: SessionRow, fullSteps: boolean): Promise<ToolOutcome> {
  const rows = await service.deps.store.listMessages(target.id);
  let content: string;
  if (fullSteps) {
    const lastUser = rows.findLastIndex((r) => r.role === "user");
    content = formatFullSteps(rows.slice(lastUser + 1));
  } else {
    const last = rows.findLast((r) => r.role === "assistant" && r.content && r.content.trim());
    content = last?.content ?? "(no assistant message yet)";
  }
  return {
    output: xmlEnvelope([
      ["instance-name", target.instance_name],
      ["session-id", target.id],
      ["content", content],
    ]),
    details: { sessionId: target.id, action: "get-last-message", fullSteps },
  };
}

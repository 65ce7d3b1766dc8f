import type { AgentConfig, Settings } from "../../config/types.js";
import { ToolError } from "../../errors.js";
import type { LlmClient } from "../../llm/types.js";
import type { SessionRow, Store } from "../../store/store.js";
import type { Logger, ToolContext } from "../../tools/types.js";
import { extensionOf, serviceKey, type ServiceKey } from "../../tools/services.js";
import type { Clock } from "../../base/clock.js";
import type { IdGenerator } from "../../base/ids.js";
import type { RunResult } from "../../engines/types.js";
import type { SessionManager } from "../session-manager.js";
import { countersSince } from "./counters.js";
import { AgentDelivery } from "./delivery.js";
import { SummaryRateLimiter } from "./summarizer.js";

/** The key under which the runtime hands the multi-agent tools their service (ctx.services.extensions). */
export const MULTI_AGENT_SERVICE: ServiceKey<MultiAgentService> = serviceKey("multiAgent");

/** Ancestors walked at most when checking that a session descends from the caller. */
const MAX_ANCESTRY = 1_000;

export interface MultiAgentDeps {
  sessions: SessionManager;
  store: Store;
  llm: LlmClient;
  clock: Clock;
  ids: IdGenerator;
  log: Logger;
  settings: Settings;
  /** The agents known now; naming one not among them re-reads the agent folders at once. */
  agents(wanted?: string): Record<string, AgentConfig>;
  /** Several nodes: see DeliveryDeps.ranElsewhere. */
  ranElsewhere?: (result: RunResult) => boolean;
}

/**
 * Per-runtime state and helpers of agent_spawn / agent_message / agent_control:
 * the delivery chains, the get-summary rate window, and the session lookups.
 */
export class MultiAgentService {
  readonly delivery: AgentDelivery;
  readonly summaryLimiter = new SummaryRateLimiter();

  constructor(readonly deps: MultiAgentDeps) {
    this.delivery = new AgentDelivery({ sessions: deps.sessions, store: deps.store, clock: deps.clock, ids: deps.ids, log: deps.log, ranElsewhere: deps.ranElsewhere });
  }

  agents(wanted?: string): Record<string, AgentConfig> {
    return this.deps.agents(wanted);
  }

  async session(id: string): Promise<SessionRow> {
    const row = await this.deps.store.getSession(id);
    if (!row) throw new ToolError("SESSION_NOT_FOUND", `no session "${id}" (use the session id agent_spawn returned)`);
    return row;
  }

  /**
   * A session the caller may reach: a session of an API key reaches only sessions of the
   * same key (any other is, to it, one that does not exist); the server secret's reach any.
   */
  async sessionFor(callerId: string, id: string): Promise<SessionRow> {
    const [caller, target] = await Promise.all([this.deps.store.getSession(callerId), this.session(id)]);
    if (caller?.owner_key && target.owner_key !== caller.owner_key) throw new ToolError("SESSION_NOT_FOUND", `no session "${id}" (use the session id agent_spawn returned)`);
    return target;
  }

  isIdle(row: SessionRow): boolean {
    return !this.deps.sessions.isRunning(row.id) && row.status !== "running";
  }

  /**
   * agent_control acts only on the caller's own sub-agents and their descendants:
   * refuses the caller itself and any session outside its spawn tree.
   */
  async assertDescendant(callerId: string, target: SessionRow): Promise<void> {
    if (target.id === callerId) throw new ToolError("VALIDATION_ERROR", "agent_control acts on a sub-agent session, not on your own session");
    let parentId = target.parent_session_id;
    for (let hops = 0; parentId && hops < MAX_ANCESTRY; hops++) {
      if (parentId === callerId) return;
      parentId = (await this.deps.store.getSession(parentId))?.parent_session_id ?? null;
    }
    throw new ToolError(
      "PERMISSION_DENIED",
      `session ${target.id} is not a sub-agent of this session (agent_control only acts on sessions you spawned, directly or through your sub-agents)`,
    );
  }

  /** agent_control get-state's fields, in the order it prints them. */
  async stateFields(target: SessionRow, callerId: string): Promise<[string, string | number | boolean | null][]> {
    const fresh = (await this.deps.store.getSession(target.id)) ?? target;
    const counters = await countersSince(this.deps.store, fresh, callerId);
    return [
      ["is-idle", this.isIdle(fresh)],
      ["number-of-messages", counters.messages],
      ["number-of-tools", counters.tools],
      ["instance-name", fresh.instance_name],
      ["session-id", fresh.id],
    ];
  }

  async dispose(): Promise<void> {
    await this.delivery.dispose();
  }
}

export function isMultiAgentService(value: unknown): value is MultiAgentService {
  return value instanceof MultiAgentService;
}

/** The service from a tool's context, or TOOL_CONTEXT_INVALID when the runtime did not install it. */
export function multiAgent(ctx: ToolContext): MultiAgentService {
  const service = extensionOf(ctx.services, MULTI_AGENT_SERVICE);
  if (!service) {
    throw new ToolError("TOOL_CONTEXT_INVALID", "the multi-agent tools are not available: this runtime has no multi-agent service");
  }
  return service;
}

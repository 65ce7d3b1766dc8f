import type { Budget, ReasoningConfig } from "../config/types.js";
import type { Engine, RunResult } from "../engines/types.js";
import type { OutputSchema } from "../engines/output-schema.js";
import type { LlmClient } from "../llm/types.js";
import type { HookRunner } from "./hooks.js";
import type { ToolServices } from "../tools/services.js";
import type { RunSetupDeps } from "./run-setup.js";
import type { SessionManager } from "./session-manager.js";
import type { WorkspaceTracker } from "./checkpoints/workspace-tracker.js";
import type { SessionPlacement } from "./placement.js";
import type { RunWriters } from "./run-writers.js";
import type { Telemetry } from "./telemetry/types.js";

export interface SessionManagerDeps extends Omit<RunSetupDeps, "services"> {
  /**
   * The services tools reach through ctx.services, built once, whole, in the manager's
   * constructor and from the manager itself: some of them drive sessions (the multi-agent
   * service sends to sub-agents, wake-ups deliver messages).
   */
  services(sessions: SessionManager): ToolServices;
  /** Engines by model key, first match wins (the native loop handles every key last). */
  engines: readonly Engine[];
  /** For the summarizer of compactions. */
  llm: LlmClient;
  /** Lifecycle hooks; absent: none. */
  hooks?: HookRunner;
  /** Sees what each turn changed in the workspace (checkpoints); absent: no checkpoints. */
  checkpoints?: WorkspaceTracker;
  /** Where sessions run and what their writes go through, chosen at start (singleNodePlacement, or a cluster node). */
  placement: SessionPlacement;
  /** True once the API key that owns a session has spent its budget (its runs then stop at the next step); absent: no key budgets. */
  keyBudgetSpent?: (ownerKey: string) => Promise<boolean>;
  /** Where each live run's writer is found by what publishes for its session from outside the run (hooks, remote methods); absent: nobody does. */
  runWriters?: RunWriters;
  /** Metrics and traces of the runs; absent: none. */
  telemetry?: Telemetry | null;
}

export interface CreateSessionInput {
  /** The new session's id when the caller had to know it first (a webhook's receipt); default: a fresh one. */
  id?: string;
  agent: string;
  mode?: string;
  model?: string | null;
  reasoning?: ReasoningConfig | null;
  budget_override?: Budget | null;
  parent_session_id?: string | null;
  spawn_depth?: number;
  instance_name?: string | null;
  objective?: string | null;
  success_criteria?: string | null;
  /** One line (folded); null or absent: made from the first message. */
  title?: string | null;
  /** Who starts it: "api" (default), "run", "openai", "agent". */
  origin?: string;
  /** A one-shot caller's session: closed once idle for limits.idleSessionTtl unless continued. */
  ephemeral?: boolean;
  forked_from?: string | null;
  /** The API key the session belongs to (a sub-agent gets its parent's). */
  owner_key?: string | null;
}

export interface SendOptions {
  /** Per-call model; applies when this message starts a run. */
  model?: string;
  reasoning?: ReasoningConfig;
  meta?: Record<string, unknown>;
  /**
   * The final answer of the run this message starts must be JSON valid against it. Such a
   * message must start its run: sent while the session runs, it is refused (SESSION_BUSY).
   */
  outputSchema?: OutputSchema;
  /**
   * false: the run's tools are not started ahead of their first call (bash's shell). For runs
   * nobody waits on (a schedule's, a webhook's), where a thousand at once would each start a
   * shell most never use. Applies when this message starts a run. default: true
   */
  warmUp?: boolean;
  /** A caller's W3C traceparent: the turn this message starts is traced under it. */
  traceparent?: string;
}

export interface SendReceipt {
  /** The inbox id, which becomes the stored user message id when delivered. */
  messageId: string;
  /** "started": the session was idle and a run began; "queued": injected at the next boundary of the running run. */
  delivery: "started" | "queued";
  /** Settles when the run that consumed the message ends. */
  result: Promise<RunResult>;
}

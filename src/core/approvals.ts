import type { AgentConfig, ApprovalSettings, Settings } from "../config/types.js";
import { isVeilError } from "../errors.js";
import type { RemoteMethods } from "../tools/custom/remote-methods.js";

/** The remote method a UI answers to let a tool call run. */
export const APPROVAL_METHOD = "tool_approval";

/** What the UI sees in `method.pending` (`data`). */
export interface ApprovalRequest {
  toolName: string;
  toolInput: unknown;
  toolCallId: string;
}

export type ApprovalVerdict = { approved: true } | { approved: false; reason: string };

/** Asks before a call of a listed tool runs; calls of other tools pass at once. */
export interface ApprovalGate {
  needed(toolName: string): boolean;
  /** Resolves once a person answered, the time ran out, or `signal` aborted (cancel, close): never rejects. */
  ask(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalVerdict>;
}

/**
 * An agent's approvals: the settings' tools and the agent's own (an agent can ask for more
 * approvals, never fewer), and the shorter of the two timeouts.
 */
export function approvalPolicy(settings: Pick<Settings, "approval">, agent: Pick<AgentConfig, "approval">): ApprovalSettings {
  const base = settings.approval;
  const own = agent.approval;
  if (!own) return base;
  return {
    tools: [...new Set([...base.tools, ...(own.tools ?? [])])],
    timeoutSeconds: Math.min(base.timeoutSeconds, own.timeoutSeconds ?? base.timeoutSeconds),
  };
}

/** A tool name matches an entry written as the name itself, or `prefix*` for every name starting with prefix (`*` alone: every tool). */
export function matchesApproval(toolName: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) => (pattern.endsWith("*") ? toolName.startsWith(pattern.slice(0, -1)) : toolName === pattern));
}

/**
 * Approvals through the session's remote methods: each listed call raises `tool_approval`
 * and waits. The calls of one session are asked one at a time, in the order they come
 * (parallel calls of one response are approved one by one).
 */
export function remoteApprovals(options: { sessionId: string; policy: ApprovalSettings; remoteMethods: RemoteMethods }): ApprovalGate {
  const { sessionId, policy, remoteMethods } = options;
  let queue: Promise<unknown> = Promise.resolve();
  const askNow = async (request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalVerdict> => {
    if (signal.aborted) return { approved: false, reason: abortReason(signal) };
    try {
      const answer = await remoteMethods.execute({ sessionId, method: APPROVAL_METHOD, data: request, timeoutMs: policy.timeoutSeconds * 1000, signal });
      return verdictOf(answer);
    } catch (error) {
      if (signal.aborted) return { approved: false, reason: abortReason(signal) };
      if (isVeilError(error) && error.code === "TIMEOUT") return { approved: false, reason: `no answer within ${policy.timeoutSeconds} s` };
      return { approved: false, reason: `the approval could not be asked: ${(error as Error).message}` };
    }
  };
  return {
    needed: (toolName) => matchesApproval(toolName, policy.tools),
    ask(request, signal) {
      const turn = queue.then(() => askNow(request, signal));
      queue = turn;
      return turn;
    },
  };
}

/** `{ approved: true }` runs the call; anything else is a denial, with the answer's reason when it gives one. */
function verdictOf(answer: unknown): ApprovalVerdict {
  const value = (answer ?? {}) as { approved?: unknown; reason?: unknown };
  if (value.approved === true) return { approved: true };
  const reason = typeof value.reason === "string" && value.reason.trim() ? value.reason.trim() : value.approved === false ? "denied" : "the answer was not { approved: true }";
  return { approved: false, reason };
}

function abortReason(signal: AbortSignal): string {
  const reason = signal.reason;
  if (isVeilError(reason) && reason.code === "SESSION_CLOSED") return "the session was closed before an answer came";
  return "the turn was cancelled before an answer came";
}

/** The approval gate of a session's calls, or none when its agent has nothing to approve. */
export function sessionApprovals(settings: Pick<Settings, "approval">, agent: Pick<AgentConfig, "approval">, sessionId: string, remoteMethods: RemoteMethods | undefined): ApprovalGate | undefined {
  const policy = approvalPolicy(settings, agent);
  if (policy.tools.length === 0) return undefined;
  if (!remoteMethods) {
    return { needed: (name) => matchesApproval(name, policy.tools), ask: async () => ({ approved: false, reason: "this runtime has no remote methods to ask for approval with" }) };
  }
  return remoteApprovals({ sessionId, policy, remoteMethods });
}

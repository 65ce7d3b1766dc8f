import type { MessageRow } from "../../store/store.js";
import { systemReminder } from "../../tools/format.js";
import type { RunResult } from "../../engines/types.js";

/** The audit text a msg#2+ gets when the first text it saw was already the run's final reply. */
export const COINCIDED_TEXT = "(coincided with final reply — see msg#1 reply)";

/** How long a sync agent_message / agent_spawn waits for the reply unless told otherwise: 600 s. */
export const DEFAULT_SYNC_TIMEOUT_SECONDS = 600;

/** Longest line a full-steps log keeps for one tool call's arguments. */
const MAX_ARGS_CHARS = 500;

/**
 * Every inter-agent message, both directions: `[Message from <agent> (session: <sid>)]: <body>`,
 * where agent and session are the SENDER's.
 */
export function wrapAgentMessage(senderAgent: string, senderSessionId: string, body: string): string {
  return `[Message from ${senderAgent} (session: ${senderSessionId})]: ${body}`;
}

/** The reminder that prefixes a msg#2+ reply delivered while the sub-agent is still running. */
export function stillRunningReminder(instanceName: string | null, sessionId: string): string {
  const who = instanceName ? `Sub-agent "${instanceName}" (session ${sessionId})` : `Session ${sessionId}`;
  return systemReminder(
    `${who} is still running. This is its first reply after reading your follow-up message, not its final answer; the final answer goes to whoever sent the message that started this run.`,
  );
}

/** The text a finished run answers with; never empty, so a caller always learns how it ended. */
export function finalText(result: RunResult): string {
  if (result.content && result.content.trim()) return result.content;
  const why = result.error ? ` (${result.error.code}: ${result.error.message})` : "";
  return `(no text reply — the run ended with stop reason "${result.stopReason}"${why})`;
}

/**
 * A turn's full steps (get-last-message with full steps): one line per assistant text and per tool call, in order.
 * `rows` are the target's messages; only assistant rows contribute.
 */
export function formatFullSteps(rows: readonly MessageRow[]): string {
  const lines: string[] = [];
  for (const row of rows) {
    if (row.role !== "assistant") continue;
    if (row.content && row.content.trim()) lines.push(`[assistant] ${row.content.trim().replace(/\n/g, "\n  ")}`);
    for (const call of row.tool_calls ?? []) {
      const args = call.arguments.length > MAX_ARGS_CHARS ? `${call.arguments.slice(0, MAX_ARGS_CHARS)}…` : call.arguments;
      lines.push(`[tool_call] ${call.name} ${args}`);
    }
  }
  return lines.length > 0 ? lines.join("\n") : "(no assistant steps)";
}

/** The static `<notice>` of an async send (Meeting 010: says it was queued, prescribes nothing). */
export function asyncNotice(instanceName: string | null, sessionId: string, role: "seed" | "follower"): string {
  const who = instanceName ? `"${instanceName}" (session ${sessionId})` : `session ${sessionId}`;
  if (role === "seed") {
    return `Your message to ${who} was queued. Its final reply will be delivered to this session as a new user message when ready.`;
  }
  return `Your message to ${who} was queued while it is already working on an earlier message. Its first reply after reading yours will be delivered to this session as a new user message (not its final answer).`;
}

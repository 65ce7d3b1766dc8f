import { VeilError } from "../errors.js";
import type { RunRecorder } from "./recorder.js";
import type { SessionWriter } from "./session-writer.js";
import { systemReminder } from "../tools/format.js";
import type { HookRunner } from "./hooks.js";

/**
 * Message sources a person typed (the chat route, `veil run`, the library's `chat()`, the
 * OpenAI-wire `agent/<name>` route).
 * UserPromptSubmit screens only these: agent messages, wake-ups and Stop continuations are
 * the runtime talking to itself.
 */
export const USER_PROMPT_SOURCES: ReadonlySet<string> = new Set(["http", "cli", "api", "openai"]);

/** Meta of rows the hooks themselves add to a session. */
export const hookMeta = (event: "SessionStart" | "Stop") => ({ source: "hook", hook: event });

/**
 * UserPromptSubmit: the content to store (with the hooks' context appended as a system
 * reminder), or HOOK_BLOCKED with the hook's reason. Free when no such hook is configured.
 */
export async function screenPrompt(hooks: HookRunner | undefined, sessionId: string, content: string, meta: Record<string, unknown> | undefined): Promise<string> {
  if (!hooks?.has("UserPromptSubmit") || !USER_PROMPT_SOURCES.has(String(meta?.source))) return content;
  const decision = await hooks.userPromptSubmit({ sessionId, prompt: content });
  if (decision.blocked) throw new VeilError("HOOK_BLOCKED", decision.reason);
  return decision.context ? `${content}\n\n${systemReminder(`UserPromptSubmit hook context:\n${decision.context}`)}` : content;
}

/**
 * SessionStart: the hooks' context becomes a stored user row (a system reminder, meta
 * `{ source: "hook", hook: "SessionStart" }`) that every later model call sees in the
 * history, published like any row the session gets.
 */
export async function recordSessionStart(hooks: HookRunner | undefined, writer: Pick<SessionWriter, "sessionId" | "appendUserRow">, source: "startup" | "resume"): Promise<void> {
  if (!hooks?.has("SessionStart")) return;
  const { context } = await hooks.sessionStart({ sessionId: writer.sessionId, source });
  if (!context) return;
  await writer.appendUserRow(systemReminder(`SessionStart hook context (${source}):\n${context}`), hookMeta("SessionStart"));
}

/**
 * Stop: asked when a run would end naturally. A continuation is queued in the inbox as a
 * user message (drained at the run's next boundary) and answers true: the run goes on.
 * Undefined when no Stop hook is configured, so engines skip the call.
 */
export function stopHook(
  hooks: HookRunner | undefined,
  sessionId: string,
  recorder: Pick<RunRecorder, "queueInput" | "baselineHeld">,
  /** The continuation is in the inbox. */
  queued: () => void,
): (() => Promise<boolean>) | undefined {
  if (!hooks?.has("Stop")) return undefined;
  return async () => {
    // The hook's commands may change files: the checkpoint baseline must hold them first.
    await recorder.baselineHeld();
    const { continueWith } = await hooks.stop({ sessionId });
    if (continueWith === undefined) return false;
    await recorder.queueInput(continueWith, hookMeta("Stop"));
    queued();
    return true;
  };
}

import type { IdGenerator } from "../base/ids.js";
import { VeilError } from "../errors.js";
import type { Store } from "../store/store.js";
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
 * `{ source: "hook", hook: "SessionStart" }`) that every later model call sees in the history.
 */
export async function recordSessionStart(
  deps: { hooks?: HookRunner; store: Store; ids: IdGenerator },
  sessionId: string,
  source: "startup" | "resume",
): Promise<void> {
  if (!deps.hooks?.has("SessionStart")) return;
  const { context } = await deps.hooks.sessionStart({ sessionId, source });
  if (!context) return;
  await deps.store.appendMessage({
    id: deps.ids.next("msg"),
    session_id: sessionId,
    role: "user",
    content: systemReminder(`SessionStart hook context (${source}):\n${context}`),
    meta: hookMeta("SessionStart"),
  });
}

/**
 * Stop: asked when a run would end naturally. A continuation is queued in the inbox as a
 * user message (drained at the run's next boundary) and answers true: the run goes on.
 * Undefined when no Stop hook is configured, so engines skip the call.
 */
export function stopHook(
  deps: { hooks?: HookRunner; store: Store; ids: IdGenerator; now(): number; /** The continuation is in the inbox. */ queued?(): void },
  sessionId: string,
): (() => Promise<boolean>) | undefined {
  const hooks = deps.hooks;
  if (!hooks?.has("Stop")) return undefined;
  return async () => {
    const { continueWith } = await hooks.stop({ sessionId });
    if (continueWith === undefined) return false;
    await deps.store.addInbox({ id: deps.ids.next("msg"), session_id: sessionId, content: continueWith, meta: hookMeta("Stop"), created_at: new Date(deps.now()).toISOString() });
    deps.queued?.();
    return true;
  };
}

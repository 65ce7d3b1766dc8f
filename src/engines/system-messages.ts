import type { LlmMessage } from "../llm/types.js";

/**
 * The system message(s) a model call starts with. The prompt is the same for every session
 * of an agent (on one day); the brief (a sub-agent's objective and success criteria) differs
 * per session, so it goes in a second system message: chat templates render the first system
 * message and then the tools, and a provider's prompt cache keeps the longest common prefix,
 * so sub-agents of one agent with different objectives still share prompt and tools.
 */
export function systemMessages(systemPrompt: string, sessionBrief = ""): LlmMessage[] {
  const prompt: LlmMessage = { role: "system", content: systemPrompt };
  return sessionBrief ? [prompt, { role: "system", content: sessionBrief }] : [prompt];
}

/** Prompt and brief as one text, for engines that take a single system prompt. */
export function joinedSystemPrompt(systemPrompt: string, sessionBrief = ""): string {
  return sessionBrief ? `${systemPrompt}\n\n${sessionBrief}` : systemPrompt;
}

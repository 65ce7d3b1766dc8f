import type { AgentConfig } from "../config/types.js";
import type { ContentPart, LlmMessage } from "../llm/types.js";
import type { MessageRow, SessionRow } from "../store/store.js";
import type { Attachment } from "../tools/types.js";

/** The system prompt: agent prompt, spawn objective, tier-2 tool summary, environment facts. */
export function buildSystemPrompt(options: {
  agent: AgentConfig;
  session: SessionRow;
  workspace: string;
  toolSummary: string;
  now: Date;
}): string {
  const parts = [options.agent.systemPrompt.trim()];
  if (options.session.objective) parts.push(`## Objective\n${options.session.objective.trim()}`);
  if (options.session.success_criteria) parts.push(`## Success Criteria\n${options.session.success_criteria.trim()}`);
  if (options.toolSummary) parts.push(options.toolSummary);
  parts.push(
    `## Environment\nWorkspace: ${options.workspace}\nSession: ${options.session.id}\nDate: ${options.now.toISOString().slice(0, 10)}`,
  );
  return parts.filter(Boolean).join("\n\n");
}

/** Stored rows → model messages. Multimodal tool output was never stored: replays see the text. */
export function rowsToMessages(rows: readonly MessageRow[]): LlmMessage[] {
  const out: LlmMessage[] = [];
  for (const row of rows) {
    const message = rowToMessage(row);
    if (message) out.push(message);
  }
  return out;
}

export function rowToMessage(row: MessageRow): LlmMessage | null {
  switch (row.role) {
    case "user":
      return { role: "user", content: row.content ?? "" };
    case "assistant":
      return {
        role: "assistant",
        content: row.content,
        thinking: row.thinking,
        toolCalls: row.tool_calls?.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })) ?? undefined,
      };
    case "tool":
      return { role: "tool", toolCallId: row.tool_call_id ?? "", content: row.content ?? "" };
    default:
      return null;
  }
}

/** A tool result as the model sees it this turn: text, plus media parts when there are attachments. */
export function toolResultContent(output: string, attachments: readonly Attachment[] | undefined): string | ContentPart[] {
  if (!attachments || attachments.length === 0) return output;
  const parts: ContentPart[] = [{ type: "text", text: output }];
  for (const a of attachments) {
    if (a.type === "image") parts.push({ type: "image", mediaType: a.media_type, data: a.data, url: a.url });
    else if (a.type === "audio" && a.data) parts.push({ type: "audio", mediaType: a.media_type, data: a.data });
  }
  return parts;
}

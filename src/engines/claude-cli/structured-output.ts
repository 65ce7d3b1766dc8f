import type { Options, SDKMessage } from "@anthropic-ai/claude-agent-sdk";
import type { ToolCallRequest } from "../../llm/types.js";
import { MAX_OUTPUT_REPAIRS, mismatch, type OutputSchema } from "../output-schema.js";
import type { RunEvent } from "../types.js";

/** The tool the SDK adds under `outputFormat`: the model gives its final answer as this call's input. */
export const STRUCTURED_OUTPUT_TOOL = "StructuredOutput";

type ResultMessage = Extract<SDKMessage, { type: "result" }>;

const INSTRUCTIONS = "# Final answer format\nWork with your tools as usual. When you are done, give your final answer by calling the StructuredOutput tool once, with the answer as its input.";

/**
 * An output schema on the claude-cli engine is the SDK's own structured output: its
 * `StructuredOutput` tool takes the answer, the SDK checks it against the schema and sends
 * the model its errors, up to MAX_STRUCTURED_OUTPUT_RETRIES failed calls (set so that it
 * sends back as many as Veil's repair requests). A model that answers in text instead is asked once for the call (the SDK's
 * own reminder, recorded as a repair request). Veil checks what the SDK hands back with its
 * own validator too, and takes a text answer that is valid JSON of the schema.
 */
export class ClaudeStructuredOutput {
  /** The input of the last StructuredOutput call: the answer kept when none matched. */
  private lastAttempt: string | null = null;
  private answer: { content: string; value: unknown } | { content: string | null; problem: string } | null = null;

  constructor(private readonly output: OutputSchema) {}

  /** The SDK's options with its structured output: the schema, the retry cap, the words in the system prompt, a permission for its tool. */
  withSdkOptions(options: Options): Options {
    const canUseTool = options.canUseTool;
    return {
      ...options,
      outputFormat: { type: "json_schema", schema: this.output.schema },
      // The SDK counts failed StructuredOutput calls, the first one included: one more than the repairs it sends back.
      env: { ...options.env, MAX_STRUCTURED_OUTPUT_RETRIES: String(MAX_OUTPUT_REPAIRS + 1) },
      systemPrompt: `${typeof options.systemPrompt === "string" ? options.systemPrompt : ""}\n\n${INSTRUCTIONS}`,
      canUseTool: async (name, input, extra) => (name === STRUCTURED_OUTPUT_TOOL ? { behavior: "allow", updatedInput: input } : canUseTool!(name, input, extra)),
    };
  }

  /** The SDK runs this tool itself. */
  ownsTool(name: string): boolean {
    return name === STRUCTURED_OUTPUT_TOOL;
  }

  /** The model called a tool: StructuredOutput's input is an attempt at the answer. */
  noteCall(call: ToolCallRequest): void {
    if (call.name === STRUCTURED_OUTPUT_TOOL) this.lastAttempt = call.arguments;
  }

  /** An SDK reminder to call StructuredOutput (a synthetic user text), as the repair request it is. */
  repairOf(message: Extract<SDKMessage, { type: "user" }>): RunEvent | null {
    if ((message as { isSynthetic?: boolean }).isSynthetic !== true) return null;
    const content = message.message.content;
    const text = typeof content === "string" ? content : Array.isArray(content) ? content.map((block) => (block.type === "text" ? block.text : "")).join("") : "";
    return text ? { type: "output_repair", content: text } : null;
  }

  /** A successful SDK turn: its structured output, or its text when the model never called the tool. */
  noteResult(result: ResultMessage): void {
    if (result.subtype !== "success") return;
    if (result.structured_output !== undefined) {
      const content = JSON.stringify(result.structured_output);
      const checked = this.output.check(content);
      this.answer = checked.ok ? { content, value: checked.value } : { content, problem: checked.problem };
      return;
    }
    const checked = this.output.check(result.result);
    this.answer = checked.ok ? { content: result.result.trim(), value: checked.value } : { content: result.result, problem: `${checked.problem} (the StructuredOutput tool was not called)` };
  }

  /** The SDK gave up after its retries: the last attempt is kept, the turn fails. */
  exhausted(result: ResultMessage): { event: RunEvent; error: { code: string; message: string } } {
    const reason = result.subtype === "success" ? result.result : result.errors.join("; ");
    return { event: { type: "structured_output", content: this.lastAttempt }, error: mismatch(reason || "the StructuredOutput retries ran out") };
  }

  /** At the end of the run: the answer's event, and the error when it did not match. */
  finish(): { event: RunEvent; error?: { code: string; message: string } } {
    const answer = this.answer ?? { content: this.lastAttempt, problem: "the turn ended without a final answer" };
    if ("value" in answer) return { event: { type: "structured_output", content: answer.content, value: answer.value } };
    return { event: { type: "structured_output", content: answer.content }, error: mismatch(answer.problem) };
  }
}

import type { LlmMessage, LlmRequest } from "../../llm/types.js";
import { judgeAnswer, outputInstructions, type OutputSchema, type OutputVerdict } from "../output-schema.js";

/**
 * The output schema's part in one native run: its words in each call's system prompt, the
 * schema on each call (the provider decides whether it becomes response_format), and the
 * judgement of each final answer, counting the repair requests sent.
 */
export class OutputGuard {
  private repairsSent = 0;
  /** The next call answers a repair request. */
  private repairing = false;
  private readonly instructions: string;

  constructor(private readonly output: OutputSchema) {
    this.instructions = outputInstructions(output);
  }

  /** The call's messages with the schema's words after the system prompt. */
  view(messages: LlmMessage[]): LlmMessage[] {
    const [first, ...rest] = messages;
    if (first?.role !== "system") return [{ role: "system", content: this.instructions }, ...messages];
    return [{ role: "system", content: `${first.content}\n\n${this.instructions}` }, ...rest];
  }

  /** What the next model call carries of the schema. */
  nextCall(): NonNullable<LlmRequest["outputSchema"]> {
    const call = { name: this.output.name, schema: this.output.schema, repair: this.repairing };
    this.repairing = false;
    return call;
  }

  /** A final answer: accepted with its value, a repair request to send, or the turn's mismatch. */
  judge(answer: string | null): OutputVerdict {
    const verdict = judgeAnswer(this.output, answer, this.repairsSent);
    if (verdict.kind === "repair") {
      this.repairsSent++;
      this.repairing = true;
    }
    return verdict;
  }
}

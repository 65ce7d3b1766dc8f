import { Type, type Static } from "../../schema.js";
import { defineTool } from "../define.js";
import { formatEntry, memoryPathForScope, parseEntries, readMemoryFile } from "../shared/memory-files.js";
import { MAX_OUTPUT_CHARS } from "../shared/truncate.js";

const Params = Type.Object({
  scope: Type.Optional(
    Type.Unsafe<"agent" | "global">({
      type: "string",
      enum: ["agent", "global"],
      description: '"agent" (default): this agent\'s own memory; "global": memory shared by every agent in the project.',
    }),
  ),
});

export const memoryRead = defineTool({
  name: "memory_read",
  description:
    "Read persistent memory: this agent's (default) or the project's global memory. Returns the file's text, or an empty string when there is none yet.",
  params: Params,
  readOnly: true,
  async execute(input: Static<typeof Params>, ctx) {
    const scope = input.scope ?? "agent";
    const filePath = memoryPathForScope(ctx.paths.memoryDir, scope, ctx.agent.name);
    const text = (await readMemoryFile(filePath)) ?? "";
    if (text.length <= MAX_OUTPUT_CHARS) return { output: text, details: { scope, filePath, chars: text.length } };
    return { output: newestWithin(text, MAX_OUTPUT_CHARS), details: { scope, filePath, chars: text.length, truncated: true } };
  },
});

/**
 * A memory file too long for one answer: keep the newest whole entries that fit
 * (recent memory matters most) and say how many older ones were left out.
 */
function newestWithin(text: string, max: number): string {
  const entries = parseEntries(text);
  const kept: string[] = [];
  let used = 0;
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    const block = entry.timestamp === null ? `${entry.content}\n\n` : formatEntry(entry.timestamp, entry.content);
    if (used + block.length > max && kept.length > 0) break;
    kept.unshift(block.length > max ? `${block.slice(0, max)}…\n\n` : block);
    used += block.length;
  }
  const omitted = entries.length - kept.length;
  return (
    `[Memory is ${text.length} chars; showing the newest ${kept.length} of ${entries.length} entries. ` +
    `${omitted} older entries omitted — use memory_search to find them.]\n\n` +
    kept.join("")
  );
}

import { Type, type Static } from "../../schema.js";
import { defineTool } from "../define.js";
import { ToolError } from "../../errors.js";
import { appendMemoryEntry, MEMORY_LOCKS_KEY, MemoryLocks, memoryPathForScope } from "../shared/memory-files.js";
import { MAX_OUTPUT_CHARS } from "../shared/truncate.js";

/** An entry longer than one memory_read answer could never be read back whole. */
export const MAX_MEMORY_ENTRY_CHARS = MAX_OUTPUT_CHARS;

const Params = Type.Object({
  content: Type.Union([Type.String(), Type.Null()]),
  scope: Type.Optional(
    Type.Unsafe<"agent" | "global">({
      type: "string",
      enum: ["agent", "global"],
      description: '"agent" (default) or "global"',
    }),
  ),
});

export const memoryWrite = defineTool({
  name: "memory_write",
  description:
    "Append to persistent memory; entries are timestamped, empty content and an exact repeat of the last entry skipped.",
  params: Params,
  touches: (input, scope) => [memoryPathForScope(scope.paths.memoryDir, input.scope ?? "agent", scope.agent.name)],
  async execute(input: Static<typeof Params>, ctx) {
    const scope = input.scope ?? "agent";
    const content = typeof input.content === "string" ? input.content.trim() : "";
    if (content.length === 0) return JSON.stringify({ status: "skipped_empty", filePath: null });
    if (content.length > MAX_MEMORY_ENTRY_CHARS) {
      throw new ToolError(
        "VALIDATION_ERROR",
        `content is ${content.length} chars; one memory entry holds at most ${MAX_MEMORY_ENTRY_CHARS}. Keep the fact short, split it into several entries, or write the detail to a file and remember its path.`,
      );
    }

    const filePath = memoryPathForScope(ctx.paths.memoryDir, scope, ctx.agent.name);
    const locks = ctx.runtime.get(MEMORY_LOCKS_KEY, () => new MemoryLocks());
    const timestamp = new Date(ctx.clock.now()).toISOString();
    const result = await locks.run(filePath, () => appendMemoryEntry(filePath, content, timestamp));

    if (result.status !== "skipped_duplicate") {
      await ctx.audit("memory.write", { scope, agent: ctx.agent.name, filePath, status: result.status, chars: content.length, timestamp });
    }
    return { output: JSON.stringify(result), details: { scope, ...result } };
  },
});

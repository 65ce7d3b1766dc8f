import { Type, type Static } from "../../schema.js";
import { defineTool } from "../define.js";
import { appendMemoryEntry, MEMORY_LOCKS_KEY, MemoryLocks, memoryPathForScope } from "../shared/memory-files.js";

const Params = Type.Object({
  content: Type.Union([Type.String(), Type.Null()], {
    description: "Content to append as a new timestamped entry. Empty or whitespace-only content is skipped.",
  }),
  scope: Type.Optional(
    Type.Unsafe<"agent" | "global">({
      type: "string",
      enum: ["agent", "global"],
      description: '"agent" (default): this agent\'s own memory; "global": memory shared by every agent in the project.',
    }),
  ),
});

export const memoryWrite = defineTool({
  name: "memory_write",
  description:
    "Append content to persistent memory (agent scope by default, or global). Entries are timestamped automatically; " +
    "an exact repeat of the last entry is skipped. Use it for facts worth keeping across sessions.",
  params: Params,
  touches: (input, scope) => [memoryPathForScope(scope.paths.memoryDir, input.scope ?? "agent", scope.agent.name)],
  async execute(input: Static<typeof Params>, ctx) {
    const scope = input.scope ?? "agent";
    const content = typeof input.content === "string" ? input.content.trim() : "";
    if (content.length === 0) return JSON.stringify({ status: "skipped_empty", filePath: null });

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

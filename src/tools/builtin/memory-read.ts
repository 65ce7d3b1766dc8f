import { stat } from "node:fs/promises";
import { Type, type Static } from "../../schema.js";
import { defineTool } from "../define.js";
import { formatEntry, memoryPathForScope, parseEntries, readMemoryFile, type MemoryEntry } from "../shared/memory-files.js";
import { memoryTotals, readSlice } from "../shared/memory-scan.js";
import { MAX_OUTPUT_CHARS } from "../shared/truncate.js";

/**
 * A memory file up to this size is read whole; a bigger one is counted a chunk at a time and
 * only its end is read, which holds every entry one answer can show (30,000 chars are at most
 * 120 KB of UTF-8).
 */
export const WHOLE_MEMORY_READ_BYTES = 1024 * 1024;

const Params = Type.Object({
  scope: Type.Optional(
    Type.Unsafe<"agent" | "global">({
      type: "string",
      enum: ["agent", "global"],
      description: '"agent" (default) or "global"',
    }),
  ),
});

export const memoryRead = defineTool({
  name: "memory_read",
  description:
    "Read the agent's persistent memory (or global memory); empty if none yet.",
  params: Params,
  readOnly: true,
  async execute(input: Static<typeof Params>, ctx) {
    const scope = input.scope ?? "agent";
    const filePath = memoryPathForScope(ctx.paths.memoryDir, scope, ctx.agent.name);
    const size = (await stat(filePath).catch(() => undefined))?.size ?? 0;
    if (size > WHOLE_MEMORY_READ_BYTES) {
      const { output, chars } = await newestOfBigFile(filePath, MAX_OUTPUT_CHARS);
      return { output, details: { scope, filePath, chars, truncated: true } };
    }
    const text = (await readMemoryFile(filePath)) ?? "";
    if (text.length <= MAX_OUTPUT_CHARS) return { output: text, details: { scope, filePath, chars: text.length } };
    const entries = parseEntries(text);
    return { output: newestWithin(entries, { chars: text.length, entries: entries.length }, MAX_OUTPUT_CHARS), details: { scope, filePath, chars: text.length, truncated: true } };
  },
});

/**
 * A file past WHOLE_MEMORY_READ_BYTES: totals from one chunked pass, entries from its last
 * bytes (the first entry there may be cut, so it is left out); when even the newest entry
 * is longer than that, its start is read instead.
 */
async function newestOfBigFile(path: string, max: number): Promise<{ output: string; chars: number }> {
  const totals = await memoryTotals(path);
  const tail = await readSlice(path, WHOLE_MEMORY_READ_BYTES);
  let entries = parseEntries(tail?.text ?? "");
  if (!tail?.fromStart && entries[0]?.timestamp === null) entries = entries.slice(1);
  if (entries.length === 0) {
    const start = await readSlice(path, 4 * max + 1024, Math.max(0, totals.lastHeaderAt));
    entries = parseEntries(start?.text ?? "").slice(-1);
  }
  return { output: newestWithin(entries, totals, max), chars: totals.chars };
}

/**
 * A memory file too long for one answer: keep the newest whole entries that fit
 * (recent memory matters most) and say how many older ones were left out.
 */
function newestWithin(entries: readonly MemoryEntry[], totals: { chars: number; entries: number }, max: number): string {
  const kept: string[] = [];
  let used = 0;
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    const block = entry.timestamp === null ? `${entry.content}\n\n` : formatEntry(entry.timestamp, entry.content);
    if (used + block.length > max && kept.length > 0) break;
    kept.unshift(block.length > max ? `${block.slice(0, max)}…\n\n` : block);
    used += block.length;
  }
  const omitted = totals.entries - kept.length;
  return (
    `[Memory is ${totals.chars} chars; showing the newest ${kept.length} of ${totals.entries} entries. ` +
    `${omitted} older entries omitted — use memory_search to find them.]\n\n` +
    kept.join("")
  );
}

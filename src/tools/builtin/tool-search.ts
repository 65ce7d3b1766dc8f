import { Type } from "../../schema.js";
import { ToolError } from "../../errors.js";
import { defineTool } from "../define.js";
import { SessionToolset } from "../registry.js";
import type { ToolContext } from "../types.js";

/** Matches returned in full; more are counted, not shown (schemas are long). */
const MAX_RESULTS = 20;

const Params = Type.Object(
  {
    query: Type.String(),
  },
  { additionalProperties: false },
);

/** Tier 3: reads full schemas of built-in and custom tools. Activates nothing. */
export const toolSearch = defineTool({
  name: "tool_search",
  description:
    "Search tools by name or description; returns full schemas. Read-only: does not make any tool callable.",
  params: Params,
  readOnly: true,
  async execute(input, ctx) {
    const toolset = sessionToolset(ctx);
    const words = input.query.toLowerCase().split(/\s+/).filter(Boolean);
    const tools = toolset
      .searchable()
      .map((tool) => ({ entry: { name: tool.name, description: tool.description, input_schema: tool.inputSchema }, rank: rank(tool.name, tool.description, words) }));
    // Skills are found the same way and say how to load them.
    const skills = toolset
      .usableSkills()
      .map((skill) => ({ entry: { skill: skill.name, description: skill.description, load: `skill({ "name": "${skill.name}" })` }, rank: rank(skill.name, skill.description, words) }));
    const matches = [...tools, ...skills]
      .filter((m) => m.rank >= 0)
      .sort((a, b) => b.rank - a.rank || nameOf(a.entry).localeCompare(nameOf(b.entry)));
    const shown = matches.slice(0, MAX_RESULTS).map(({ entry }) => entry);
    const text = JSON.stringify(shown, null, 2);
    const more = matches.length - shown.length;
    return {
      output: more > 0 ? `${text}\n\n[${more} more tools match; use a more specific query]` : text,
      details: { query: input.query, matches: matches.length },
    };
  },
});

function nameOf(entry: { name: string } | { skill: string }): string {
  return "name" in entry ? entry.name : entry.skill;
}

/** -1 when a word is missing; otherwise higher when words hit the name. */
function rank(toolName: string, description: string, words: string[]): number {
  const name = toolName.toLowerCase();
  const haystack = `${name} ${name.replace(/[_-]/g, " ")} ${description.toLowerCase()}`;
  let score = 0;
  for (const word of words) {
    if (!haystack.includes(word)) return -1;
    if (name.includes(word)) score += 2;
    else score += 1;
  }
  if (words.length > 0 && (name === words.join("_") || name === words.join("-"))) score += 10;
  return score;
}

export function sessionToolset(ctx: ToolContext): SessionToolset {
  const toolset = ctx.services.toolset;
  if (!toolset) throw new ToolError("TOOL_CONTEXT_INVALID", "this run has no tool registry (ctx.services.toolset)");
  return toolset;
}

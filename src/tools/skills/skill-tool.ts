import { Type } from "../../schema.js";
import { ToolError } from "../../errors.js";
import { defineTool } from "../define.js";
import { SKILL_TOOL_NAME } from "../registry.js";
import { sessionToolset } from "../builtin/tool-search.js";
import type { RegisteredTool } from "../types.js";
import { MAX_SKILL_BYTES } from "./skill-file.js";
import { skillFiles, type Skill } from "./source.js";

const Params = Type.Object(
  {
    name: Type.String({ description: "The skill's name, as the Skills list of the system prompt (or tool_search) gives it" }),
  },
  { additionalProperties: false },
);

/**
 * Loads a skill: the body of its SKILL.md and the paths of the other files in its folder.
 * Registered (after the 24 built-ins) only for agents that have skills.
 */
export const skillTool = defineTool({
  name: SKILL_TOOL_NAME,
  description:
    "Load a skill: the instructions in its SKILL.md and the paths of the other files in its folder. Call it when a task matches a skill's description in the Skills list, then follow the instructions; read the listed files with read_file when they refer to them.",
  params: Params,
  readOnly: true,
  async execute(input, ctx) {
    const toolset = sessionToolset(ctx);
    const skill = toolset.skill(input.name);
    if (!skill) {
      const names = toolset.usableSkills().map((s) => s.name);
      throw new ToolError("SKILL_NOT_FOUND", `no skill named "${input.name}"; the skills are: ${names.join(", ") || "(none)"}`);
    }
    const { files, more } = await skillFiles(skill);
    return { output: skillText(skill, files, more), details: { name: skill.name, scope: skill.scope, folder: skill.folder, files: files.length + more } };
  },
});

/** The built-ins plus the `skill` tool when there is any skill: no skills, the tool list stays as it was. */
export function withSkillTool(builtins: readonly RegisteredTool[], skills: readonly Skill[]): readonly RegisteredTool[] {
  return skills.length > 0 && !builtins.some((tool) => tool.name === SKILL_TOOL_NAME) ? [...builtins, skillTool] : builtins;
}

function skillText(skill: Skill, files: readonly string[], more: number): string {
  const parts = [`<skill name="${skill.name}" folder="${skill.folder}">`, skill.body || "(SKILL.md has no instructions after its front matter)"];
  if (skill.truncated) parts.push(`[SKILL.md is ${skill.bytes} bytes; only the first ${MAX_SKILL_BYTES} were read. Read the rest with read_file ${skill.file}]`);
  parts.push("</skill>");
  if (files.length === 0) parts.push("", "The skill's folder holds no other files.");
  else {
    parts.push("", "Other files in the skill's folder (read them with read_file when the instructions refer to them):", ...files);
    if (more > 0) parts.push(`… and ${more} more (list_dir ${skill.folder})`);
  }
  return parts.join("\n");
}

import type { Skill } from "./source.js";
import { summaryDescription } from "./skill-file.js";

const HEADER = [
  "## Skills",
  "Skills are instructions for particular kinds of task, loaded on demand. When a task matches a skill's description, call skill with its name before you start, then follow what it returns.",
];

/**
 * The system prompt's list of skills within `budgetBytes`: every skill with its description
 * while that fits, else the names alone (tool_search shows the descriptions), else as many
 * names as fit and a count of the rest. Sorted input gives a byte-stable section.
 */
export function skillsSection(skills: readonly Pick<Skill, "name" | "description">[], budgetBytes: number): string {
  if (skills.length === 0) return "";
  const full = [...HEADER, ...skills.map((skill) => `- ${skill.name}: ${summaryDescription(skill.description)}`)].join("\n");
  if (Buffer.byteLength(full) < budgetBytes) return full;
  const intro = "Too many to describe here; tool_search with a word of the task shows their descriptions. Names:";
  const names = skills.map((skill) => skill.name);
  const namesOnly = [...HEADER, intro, names.join(", ")].join("\n");
  if (Buffer.byteLength(namesOnly) < budgetBytes) return namesOnly;
  const fixed = Buffer.byteLength([...HEADER, intro, ""].join("\n")) + 40;
  const shown: string[] = [];
  let used = fixed;
  for (const name of names) {
    used += Buffer.byteLength(name) + 2;
    if (used >= budgetBytes) break;
    shown.push(name);
  }
  return [...HEADER, intro, `${shown.join(", ")} … and ${names.length - shown.length} more`].join("\n");
}

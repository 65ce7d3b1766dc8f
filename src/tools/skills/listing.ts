import { skillFiles, type BrokenSkill, type Skill, type SkillCatalog } from "./source.js";

/** One skill as `GET /skills` lists it. */
export interface SkillListing {
  name: string;
  description: string;
  scope: Skill["scope"];
  folder: string;
  file: string;
  /** active: the agent's `skill` tool loads it; shadowed: one of the same name comes first. */
  state: "active" | "shadowed";
  /** For a shadowed skill: the folder of the one in effect. */
  shadowedBy?: string;
  /** The other files of its folder (absolute paths, at most 100). */
  files: string[];
  bytes: number;
  truncated: boolean;
}

/** A skill folder that could not be used, listed like a broken tool folder. */
export interface BrokenSkillListing {
  name: null;
  state: "broken";
  scope: BrokenSkill["scope"];
  folder: string;
  file: string;
  error: string;
}

/** The public shape of an agent's skills: in effect, then shadowed, then broken. */
export async function publicSkillList(catalog: SkillCatalog): Promise<(SkillListing | BrokenSkillListing)[]> {
  const listed = async (skill: Skill, state: SkillListing["state"], shadowedBy?: string): Promise<SkillListing> => ({
    name: skill.name,
    description: skill.description,
    scope: skill.scope,
    folder: skill.folder,
    file: skill.file,
    state,
    ...(shadowedBy ? { shadowedBy } : {}),
    files: (await skillFiles(skill)).files,
    bytes: skill.bytes,
    truncated: skill.truncated,
  });
  const active = await Promise.all(catalog.skills.map((skill) => listed(skill, "active")));
  const shadowed = await Promise.all(catalog.shadowed.map((skill) => listed(skill, "shadowed", skill.shadowedBy)));
  const broken = catalog.broken.map((entry): BrokenSkillListing => ({ name: null, state: "broken", scope: entry.scope, folder: entry.folder, file: entry.file, error: entry.reason }));
  return [...active, ...shadowed, ...broken];
}

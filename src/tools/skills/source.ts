import type { Stats } from "node:fs";
import { dirname, join } from "node:path";
import type { AgentConfig, VeilPaths } from "../../config/types.js";
import { readBoundedText } from "../shared/bounded-text.js";
import { fileStamp, listFolders, statOrNull } from "../shared/folders.js";
import { comparePaths, walkFiles } from "../shared/file-walk.js";
import type { Logger } from "../types.js";
import { MAX_SKILL_BYTES, parseSkillFile } from "./skill-file.js";

export type SkillScope = "agent" | "project" | "global";

/** One usable skill: a folder holding a SKILL.md with a good front matter. */
export interface Skill {
  name: string;
  description: string;
  scope: SkillScope;
  /** The skill's folder (absolute). */
  folder: string;
  /** Its SKILL.md (absolute). */
  file: string;
  /** The Markdown after the front matter (cut at MAX_SKILL_BYTES of file). */
  body: string;
  /** SKILL.md's size; more than MAX_SKILL_BYTES means `body` is cut. */
  bytes: number;
  truncated: boolean;
}

/** A skill folder that could not be used, and why (listed like a broken tool folder). */
export interface BrokenSkill {
  scope: SkillScope;
  folder: string;
  file: string;
  reason: string;
}

/** A skill hidden by one of the same name that comes first in precedence. */
export interface ShadowedSkill extends Skill {
  /** The folder of the skill that wins. */
  shadowedBy: string;
}

export interface SkillCatalog {
  /** The skills in effect, by name. */
  skills: Skill[];
  shadowed: ShadowedSkill[];
  broken: BrokenSkill[];
}

/** Where an agent's skills come from (re-read on change). */
export interface SkillSource {
  discover(agent: AgentConfig): SkillCatalog;
}

export const SKILL_FILE = "SKILL.md";
/** The other files of a skill folder listed for the model; more are counted. */
export const MAX_LISTED_FILES = 100;
const LISTED_DEPTH = 6;

/**
 * Skill folders in precedence order: the agent's own `skills/`, then the project's
 * (`.veil/skills/` before `.claude/skills/`), then `$VEIL_HOME/skills/`. The first folder
 * that defines a name wins.
 */
export function skillRoots(paths: VeilPaths, agent: AgentConfig): { scope: SkillScope; dir: string }[] {
  const roots: { scope: SkillScope; dir: string }[] = [];
  if (agent.agentFolder) roots.push({ scope: "agent", dir: join(agent.agentFolder, "skills") });
  roots.push({ scope: "project", dir: join(paths.projectDir, "skills") });
  roots.push({ scope: "project", dir: join(paths.workspace, ".claude", "skills") });
  roots.push({ scope: "global", dir: join(paths.homeDir, "skills") });
  return roots;
}

type Entry = { stamp: string; ok: true; skill: Omit<Skill, "scope"> } | { stamp: string; ok: false; reason: string };

/**
 * Skills from folders, re-read on change: each SKILL.md is parsed again only when its
 * inode, size or mtime moved, so a discovery costs a readdir per root and a stat per
 * folder. A broken folder is logged once per change and never hides the others.
 */
export function createSkillSource(options: { paths: VeilPaths; log: Logger }): SkillSource {
  const cache = new Map<string, Entry>();
  const load = (folder: string): Entry => {
    const file = join(folder, SKILL_FILE);
    const info = statOrNull(file);
    const stamp = fileStamp(info);
    const cached = cache.get(folder);
    if (cached?.stamp === stamp) return cached;
    const entry = readEntry(folder, file, info, stamp);
    if (!entry.ok) options.log.warn(`skill skipped: ${file}: ${entry.reason}`, { folder });
    cache.set(folder, entry);
    return entry;
  };
  return {
    discover(agent) {
      const byName = new Map<string, Skill>();
      const shadowed: ShadowedSkill[] = [];
      const broken: BrokenSkill[] = [];
      for (const root of skillRoots(options.paths, agent)) {
        const folders = listFolders(root.dir);
        forgetVanished(cache, root.dir, folders);
        for (const folder of folders) {
          const entry = load(folder);
          if (!entry.ok) {
            broken.push({ scope: root.scope, folder, file: join(folder, SKILL_FILE), reason: entry.reason });
            continue;
          }
          const skill: Skill = { ...entry.skill, scope: root.scope };
          const winner = byName.get(skill.name);
          if (winner) shadowed.push({ ...skill, shadowedBy: winner.folder });
          else byName.set(skill.name, skill);
        }
      }
      const skills = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      return { skills, shadowed, broken };
    },
  };
}

function readEntry(folder: string, file: string, info: Stats | null, stamp: string): Entry {
  if (!info) return { stamp, ok: false, reason: `no ${SKILL_FILE} in this folder` };
  if (!info.isFile()) return { stamp, ok: false, reason: `${SKILL_FILE} is not a regular file` };
  const read = readBoundedText(file, MAX_SKILL_BYTES);
  if (!read) return { stamp, ok: false, reason: `${SKILL_FILE} could not be read` };
  const parsed = parseSkillFile(read.text);
  if (!parsed.ok) return { stamp, ok: false, reason: parsed.reason };
  const { name, description, body } = parsed.skill;
  return { stamp, ok: true, skill: { name, description, folder, file, body, bytes: read.bytes, truncated: read.truncated } };
}

/**
 * The files of a skill folder besides its SKILL.md, as absolute paths in name order (at most
 * MAX_LISTED_FILES; `more` counts the rest). `.git` and `node_modules` are not entered.
 */
export async function skillFiles(skill: Pick<Skill, "folder">): Promise<{ files: string[]; more: number }> {
  const all = (await walkFiles(skill.folder, { skipDirs: [".git", "node_modules"], maxDepth: LISTED_DEPTH })).filter((rel) => rel !== SKILL_FILE).sort(comparePaths);
  return { files: all.slice(0, MAX_LISTED_FILES).map((rel) => join(skill.folder, rel)), more: Math.max(0, all.length - MAX_LISTED_FILES) };
}

/** Drops cached folders of `dir` that are gone from disk. */
function forgetVanished(cache: Map<string, Entry>, dir: string, present: readonly string[]): void {
  const keep = new Set(present);
  for (const folder of cache.keys()) if (dirname(folder) === dir && !keep.has(folder)) cache.delete(folder);
}

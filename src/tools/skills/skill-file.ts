import { createRequire } from "node:module";
import type * as Yaml from "yaml";

// Required on the first SKILL.md, not imported: the yaml package's many files would cost every
// `veil run` start-up, with or without skills.
const require = createRequire(import.meta.url);
let yaml: typeof Yaml | undefined;

/** A SKILL.md past this is cut: the body the `skill` tool returns says where the rest is. */
export const MAX_SKILL_BYTES = 256 * 1024;
/** The front matter must close within this many bytes (it is a few lines of YAML). */
export const MAX_FRONT_MATTER_BYTES = 16 * 1024;
/** The Agent Skills format's limits. */
export const MAX_NAME_LENGTH = 64;
export const MAX_DESCRIPTION_LENGTH = 1024;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export interface ParsedSkill {
  name: string;
  description: string;
  /** The Markdown after the front matter. */
  body: string;
}

export type SkillParse = { ok: true; skill: ParsedSkill } | { ok: false; reason: string };

/**
 * Reads `SKILL.md` text: YAML front matter between a first line `---` and the next `---`
 * (or `...`) line, with string `name` and `description`, then the Markdown body. Every
 * problem is a reason naming the field, never an exception.
 */
export function parseSkillFile(text: string): SkillParse {
  const lines = text.split(/\r?\n/);
  if (lines[0]?.trim() !== "---") return fail("SKILL.md must start with YAML front matter: a first line `---`, then `name:` and `description:`, then a line `---`");
  let end = -1;
  let bytes = 0;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trimEnd() === "---" || line.trimEnd() === "...") {
      end = i;
      break;
    }
    bytes += Buffer.byteLength(line) + 1;
    if (bytes > MAX_FRONT_MATTER_BYTES) return fail(`the front matter does not close with a \`---\` line within ${MAX_FRONT_MATTER_BYTES} bytes`);
  }
  if (end < 0) return fail("the front matter never closes: add a line `---` after `description:`");
  yaml ??= require("yaml") as typeof Yaml;
  const document = yaml.parseDocument(lines.slice(1, end).join("\n"), { prettyErrors: false, uniqueKeys: true });
  if (document.errors.length > 0) return fail(`the front matter is not valid YAML (${oneLine(document.errors[0]!.message)})`);
  const data: unknown = document.toJS({ maxAliasCount: 50 });
  if (typeof data !== "object" || data === null || Array.isArray(data)) return fail("the front matter must be a YAML mapping with `name` and `description`");
  const { name, description } = data as Record<string, unknown>;
  if (name !== undefined && name !== null && typeof name !== "string") return fail("`name` must be a string (such as `name: pdf-forms`)");
  if (typeof name !== "string" || name.trim() === "") return fail("the front matter has no `name` (a string such as `name: pdf-forms`)");
  if (name.length > MAX_NAME_LENGTH || !NAME.test(name)) return fail(`\`name\` "${preview(name)}" must be letters, digits, '.', '_' or '-' (starting with a letter or digit), at most ${MAX_NAME_LENGTH} characters`);
  if (description !== undefined && description !== null && typeof description !== "string") return fail("`description` must be a string (quote it if it holds a colon)");
  if (typeof description !== "string" || description.trim() === "") return fail("the front matter has no `description` (a string saying what the skill does and when to use it)");
  return { ok: true, skill: { name, description: description.trim(), body: lines.slice(end + 1).join("\n").trim() } };
}

/** The description on one line, cut at the format's limit (the summary lists it). */
export function summaryDescription(description: string): string {
  const flat = description.replace(/\s+/g, " ").trim();
  return flat.length > MAX_DESCRIPTION_LENGTH ? `${flat.slice(0, MAX_DESCRIPTION_LENGTH - 1)}…` : flat;
}

function fail(reason: string): SkillParse {
  return { ok: false, reason };
}

function oneLine(text: string): string {
  return text.split("\n", 1)[0]!.trim();
}

function preview(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

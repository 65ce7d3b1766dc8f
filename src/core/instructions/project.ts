import { join } from "node:path";
import type { VeilPaths } from "../../config/types.js";
import { readBoundedText } from "../../tools/shared/bounded-text.js";
import { fileStamp, statOrNull } from "../../tools/shared/folders.js";

/** An instructions file past this is cut, with a note naming the file (a prompt, not a dump). */
export const MAX_INSTRUCTIONS_BYTES = 64 * 1024;

/** File names read as a folder's instructions, first found wins (Claude Code's name second). */
export const INSTRUCTION_FILES = ["AGENTS.md", "CLAUDE.md"] as const;

export interface InstructionFile {
  scope: "global" | "project";
  path: string;
  text: string;
  bytes: number;
  truncated: boolean;
}

/** The instructions file of a folder (AGENTS.md, else CLAUDE.md), or null when it has none or it is blank. */
export function folderInstructions(folder: string, scope: InstructionFile["scope"]): InstructionFile | null {
  for (const name of INSTRUCTION_FILES) {
    const path = join(folder, name);
    if (!statOrNull(path)?.isFile()) continue;
    const read = readBoundedText(path, MAX_INSTRUCTIONS_BYTES);
    if (!read || read.text.trim() === "") return null;
    return { scope, path, text: read.text.trim(), bytes: read.bytes, truncated: read.truncated };
  }
  return null;
}

/**
 * The standing instructions every agent's system prompt carries: `$VEIL_HOME/AGENTS.md`
 * (the user's, for every project), then the workspace root's AGENTS.md (else CLAUDE.md).
 * Re-read only when one of those files changed (a stat each per session).
 */
export function createProjectInstructions(paths: Pick<VeilPaths, "homeDir" | "workspace">): () => InstructionFile[] {
  const candidates = [join(paths.homeDir, "AGENTS.md"), ...INSTRUCTION_FILES.map((name) => join(paths.workspace, name))];
  let stamp: string | null = null;
  let files: InstructionFile[] = [];
  return () => {
    const now = candidates.map((path) => fileStamp(statOrNull(path))).join("|");
    if (now !== stamp) {
      files = [folderInstructions(paths.homeDir, "global"), folderInstructions(paths.workspace, "project")].filter((file): file is InstructionFile => file !== null);
      stamp = now;
    }
    return files;
  };
}

/** The system prompt's section for the instruction files; "" when there are none. */
export function instructionsSection(files: readonly InstructionFile[]): string {
  return files
    .map((file) => {
      const title = file.scope === "global" ? `## The user's instructions (${file.path}, for every project)` : `## Project instructions (${file.path})`;
      return [title, file.text, ...(file.truncated ? [truncationNote(file)] : [])].join("\n");
    })
    .join("\n\n");
}

export function truncationNote(file: Pick<InstructionFile, "path" | "bytes">): string {
  return `[${file.path} is ${file.bytes} bytes; only the first ${MAX_INSTRUCTIONS_BYTES} are shown here. Read the rest with read_file.]`;
}

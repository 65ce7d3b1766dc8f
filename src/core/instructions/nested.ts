import { realpathSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import type { Store } from "../../store/store.js";
import { systemReminder } from "../../tools/format.js";
import { statOrNull } from "../../tools/shared/folders.js";
import { isWithin, resolveToolPath } from "../../tools/shared/path-guard.js";
import type { Disposable, RegisteredTool, ResourceScope, ToolOutcome } from "../../tools/types.js";
import { folderInstructions, truncationNote, type InstructionFile } from "./project.js";

/** Session meta: the folders (workspace-relative) whose AGENTS.md this session was given. */
export const NESTED_INSTRUCTIONS_KEY = "nestedInstructions";
const RESOURCE_KEY = "instructions.nested";

/** Where the tracker keeps what was given: the store of the run that writes the session (fenced on several nodes). */
export type NestedInstructionsStore = Pick<Store, "getSessionMeta" | "setSessionMeta">;

export interface NestedInstructionsDeps {
  workspace: string;
  sessionId: string;
}

/** Folders never searched for instructions: other people's packages and VCS internals. */
const SKIPPED_SEGMENTS = new Set(["node_modules", ".git"]);

/**
 * The AGENTS.md (else CLAUDE.md) of folders below the workspace root, each added to the
 * first successful file-tool result that reaches that folder or a folder inside it, once per
 * session. What was given is kept in the session's meta, so a restart does not repeat it; a
 * compaction forgets it (the result that carried it may be gone from the model's view). The
 * tracker lives as long as the session here; each call gets the store of the run it is part
 * of, so its marks are that run's writes.
 */
export class NestedInstructions implements Disposable {
  private given: Set<string> | null = null;
  private loading: Promise<Set<string>> | null = null;

  constructor(private readonly deps: NestedInstructionsDeps) {}

  /** The outcome with the instructions of every newly reached folder appended; `store` is the run's. */
  async annotate(tool: RegisteredTool, input: Record<string, unknown>, outcome: ToolOutcome, store: NestedInstructionsStore): Promise<ToolOutcome> {
    if (outcome.isError || !tool.reaches) return outcome;
    const folders = this.foldersReached(tool.reaches(input));
    if (folders.length === 0) return outcome;
    const given = await this.load(store);
    const fresh: InstructionFile[] = [];
    for (const folder of folders) {
      const key = relative(this.deps.workspace, folder);
      if (given.has(key)) continue;
      const file = folderInstructions(folder, "project");
      if (!file) continue;
      // Marked before any await, so parallel calls reaching the same folder add it once.
      given.add(key);
      fresh.push(file);
    }
    if (fresh.length === 0) return outcome;
    await store.setSessionMeta(this.deps.sessionId, NESTED_INSTRUCTIONS_KEY, [...given]);
    const notes = fresh.map((file) => systemReminder(this.describe(file)));
    const shown = fresh.map((file) => relative(this.deps.workspace, file.path));
    return { ...outcome, output: [outcome.output, ...notes].join("\n\n"), details: { ...(outcome.details ?? {}), instructions: shown } };
  }

  /** After a compaction: every folder's instructions are due again. */
  async forget(store: Pick<Store, "setSessionMeta">): Promise<void> {
    this.given = new Set();
    this.loading = null;
    await store.setSessionMeta(this.deps.sessionId, NESTED_INSTRUCTIONS_KEY, null);
  }

  dispose(): void {
    this.given = null;
    this.loading = null;
  }

  private describe(file: InstructionFile): string {
    const folder = relative(this.deps.workspace, dirname(file.path));
    const lines = [`Instructions from ${relative(this.deps.workspace, file.path)} (they apply to the files in ${folder}/):`, file.text];
    if (file.truncated) lines.push(truncationNote(file));
    return lines.join("\n");
  }

  /** The folders from below the root down to the one the path names (a file: its folder). */
  private foldersReached(path: string | undefined): string[] {
    if (!path) return [];
    let target: string;
    try {
      target = realpathSync(resolveToolPath(this.deps.workspace, path));
    } catch {
      return [];
    }
    const { workspace } = this.deps;
    if (!isWithin(workspace, target)) return [];
    const folder = statOrNull(target)?.isDirectory() ? target : dirname(target);
    const rel = relative(workspace, folder);
    if (rel === "") return [];
    const out: string[] = [];
    let current = workspace;
    for (const segment of rel.split(sep)) {
      if (SKIPPED_SEGMENTS.has(segment)) break;
      current = join(current, segment);
      out.push(current);
    }
    return out;
  }

  private async load(store: NestedInstructionsStore): Promise<Set<string>> {
    if (this.given) return this.given;
    this.loading ??= store.getSessionMeta<string[]>(this.deps.sessionId, NESTED_INSTRUCTIONS_KEY).then((stored) => {
      this.given ??= new Set(Array.isArray(stored) ? stored : []);
      return this.given;
    });
    return this.loading;
  }
}

/** The session's tracker (one per live session). */
export function nestedInstructions(resources: ResourceScope, deps: NestedInstructionsDeps): NestedInstructions {
  return resources.get(RESOURCE_KEY, () => new NestedInstructions(deps));
}

/** A compaction happened: the session's nested instructions are given again from now on. */
export async function forgetNestedInstructions(resources: ResourceScope, store: Pick<Store, "setSessionMeta">, sessionId: string): Promise<void> {
  const tracker = resources.peek<NestedInstructions>(RESOURCE_KEY);
  if (tracker) await tracker.forget(store);
  else await store.setSessionMeta(sessionId, NESTED_INSTRUCTIONS_KEY, null);
}

import { stat } from "node:fs/promises";
import type { Stats } from "node:fs";
import { ToolError } from "../../errors.js";
import type { ToolContext } from "../types.js";
import { atomicWrite } from "./atomic-write.js";
import { guardWrite, pathPolicyFromContext, resolveToolPath, type WriteTarget } from "./path-guard.js";
import { checkWriteGate, recordRead } from "./read-tracker.js";

export interface PreparedWrite extends WriteTarget {
  /** Stats of the existing destination; undefined for a new file. */
  stats?: Stats;
}

type WriteContext = Pick<ToolContext, "workspace" | "settings" | "paths" | "session" | "readMarkers">;

/**
 * Everything write_file and edit_file check before touching a file, in order:
 * path policy (outside / protected / broken symlink), file type, then for an existing
 * file the must-have-read, post-restart and concurrent-edit gates.
 */
export async function prepareWrite(ctx: WriteContext, file: string): Promise<PreparedWrite> {
  const absolute = resolveToolPath(ctx.workspace, file);
  const target = await guardWrite(pathPolicyFromContext(ctx), absolute);
  if (!target.exists) return target;
  const stats = await stat(target.real);
  if (stats.isDirectory()) throw new ToolError("IS_A_DIRECTORY", `${absolute} is a directory; give a file path.`);
  if (!stats.isFile()) throw new ToolError("NOT_A_FILE", `${absolute} is not a regular file (device, socket or pipe).`);
  await checkWriteGate(ctx, target.real, absolute);
  return { ...target, stats };
}

/** Atomic write (of `content`, or of its parts one after another), then refresh both gates so the model's own write does not trip them. */
export async function commitWrite(ctx: WriteContext, target: PreparedWrite, content: string | readonly string[]): Promise<void> {
  await atomicWrite(target.real, content, { mode: target.stats ? target.stats.mode & 0o7777 : undefined });
  const after = await stat(target.real);
  await recordRead(ctx, target.real, after.mtimeMs);
}

import { Type } from "../../schema.js";
import { opendir, readlink, stat } from "node:fs/promises";
import type { Dirent } from "node:fs";
import { join } from "node:path";
import { defineTool } from "../define.js";
import { ToolError } from "../../errors.js";
import { resolveToolPath } from "../shared/path-guard.js";
import { statForTool } from "../shared/fs-errors.js";
import { formatSize } from "../shared/text-view.js";
import { MAX_OUTPUT_CHARS } from "../shared/truncate.js";

/** Entries shown before the listing is cut. */
const MAX_ENTRIES = 1000;
/** Entries read past the ones kept before they are sorted and cut back again. */
const TRIM_SLACK = 4096;
/** Listed in recursive mode but never descended into. */
const NOT_DESCENDED = new Set([".git", "node_modules"]);

const Params = Type.Object(
  {
    dir: Type.String(),
    recursive: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

interface Entry {
  /** Path relative to the listed directory; folders end in `/`. */
  path: string;
  type: "dir" | "file" | "symlink" | "other";
  size?: number;
  target?: string;
}

export const listDir = defineTool({
  name: "list_dir",
  description:
    `List a directory with sizes and types (max ${MAX_ENTRIES} entries).`,
  params: Params,
  readOnly: true,
  reaches: (input) => input.dir,
  async execute(input, ctx) {
    const dir = resolveToolPath(ctx.workspace, input.dir);
    const stats = await statForTool(dir, "directory");
    if (!stats.isDirectory()) throw new ToolError("NOT_A_DIRECTORY", `${dir} is not a directory. Use read_file to read a file.`);

    const entries: Entry[] = [];
    const skipped: string[] = [];
    let cut = false;
    const visit = async (absolute: string, prefix: string): Promise<void> => {
      const { children, more } = await firstChildren(absolute, MAX_ENTRIES - entries.length).catch((error: NodeJS.ErrnoException) => {
        if (prefix === "") throw new ToolError("PERMISSION_DENIED", `Cannot list ${absolute}: ${error.code ?? error.message}`);
        return { children: [] as Dirent[], more: false };
      });
      if (more) cut = true;
      for (const child of children) {
        if (entries.length >= MAX_ENTRIES) {
          cut = true;
          return;
        }
        const rel = prefix + child.name;
        const full = join(absolute, child.name);
        if (child.isDirectory()) {
          entries.push({ path: `${rel}/`, type: "dir" });
          if (!input.recursive) continue;
          if (NOT_DESCENDED.has(child.name)) skipped.push(`${rel}/`);
          else await visit(full, `${rel}/`);
        } else if (child.isSymbolicLink()) {
          const target = await readlink(full).catch(() => "?");
          const pointsTo = await stat(full).catch(() => undefined);
          const suffix = pointsTo ? (pointsTo.isDirectory() ? "/" : "") : " (broken)";
          entries.push({ path: rel, type: "symlink", target: `${target}${suffix}`, size: pointsTo?.isFile() ? pointsTo.size : undefined });
        } else if (child.isFile()) {
          const size = await stat(full).then((s) => s.size).catch(() => undefined);
          entries.push({ path: rel, type: "file", size });
        } else {
          entries.push({ path: rel, type: "other" });
        }
      }
    };
    await visit(dir, "");

    const rendered = entries.map(renderEntry);
    let body = rendered.join("\n");
    if (body.length > MAX_OUTPUT_CHARS) {
      const kept: string[] = [];
      let chars = 0;
      for (const line of rendered) {
        if (chars + line.length + 1 > MAX_OUTPUT_CHARS) break;
        kept.push(line);
        chars += line.length + 1;
      }
      body = kept.join("\n");
      cut = true;
      rendered.length = kept.length;
    }
    const notes: string[] = [];
    if (entries.length === 0) notes.push("(empty directory)");
    if (skipped.length) notes.push(`(Contents not listed for: ${skipped.join(", ")})`);
    if (cut) notes.push(`(Listing cut at ${rendered.length} entries. List a subdirectory, or use glob to narrow it down.)`);
    const header = dir.endsWith("/") ? dir : `${dir}/`;
    return {
      output: [header, body, ...notes].filter((part) => part !== "").join("\n"),
      details: { path: dir, entries: rendered.length, truncated: cut, skipped },
    };
  },
});

/** Listing order: directories first, then by name (UTF-16 code units). */
function listingOrder(a: Dirent, b: Dirent): number {
  return Number(b.isDirectory()) - Number(a.isDirectory()) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/**
 * The first `limit` entries of a folder in listing order, read as a stream: a folder of a
 * million entries costs a few times `limit` of them, not a million (a whole readdir held
 * them all to show 1000). `more`: there were others after them.
 */
async function firstChildren(absolute: string, limit: number): Promise<{ children: Dirent[]; more: boolean }> {
  if (limit <= 0) {
    for await (const _ of await opendir(absolute)) return { children: [], more: true };
    return { children: [], more: false };
  }
  const kept: Dirent[] = [];
  let more = false;
  const trim = () => {
    kept.sort(listingOrder);
    if (kept.length > limit) {
      kept.length = limit;
      more = true;
    }
  };
  for await (const entry of await opendir(absolute, { bufferSize: 256 })) {
    kept.push(entry);
    if (kept.length >= limit + TRIM_SLACK) trim();
  }
  trim();
  return { children: kept, more };
}

function renderEntry(entry: Entry): string {
  switch (entry.type) {
    case "dir":
      return entry.path;
    case "file":
      return entry.size === undefined ? entry.path : `${entry.path}  (${formatSize(entry.size)})`;
    case "symlink":
      return `${entry.path} -> ${entry.target}${entry.size === undefined ? "" : `  (${formatSize(entry.size)})`}`;
    default:
      return `${entry.path}  (special file)`;
  }
}

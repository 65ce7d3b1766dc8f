import { Type } from "../../schema.js";
import { readFile as readBytes } from "node:fs/promises";
import { basename } from "node:path";
import { defineTool } from "../define.js";
import { ToolError } from "../../errors.js";
import { systemReminder } from "../format.js";
import type { ToolContext, ToolOutcome } from "../types.js";
import { guardRead, pathPolicyFromContext, resolveToolPath } from "../shared/path-guard.js";
import { statForTool, readFailure } from "../shared/fs-errors.js";
import { fileKind, MAX_MEDIA_BYTES } from "../shared/file-kinds.js";
import { recordRead } from "../shared/read-tracker.js";
import { DEFAULT_READ_LINES, formatSize, renderLines, type OutputCap, type TextWindow } from "../shared/text-view.js";
import { readLineWindow } from "../shared/line-window.js";

/**
 * One read_file answer holds at most 256 KB (UTF-8) of numbered lines, whatever offset/limit
 * ask for; past it the answer ends with a footer naming the cap and the lines shown. Far
 * above what 2000 ordinary lines take, so the documented 2000-line default is what users meet.
 */
export const READ_MAX_BYTES = 256 * 1024;
const READ_CAP: OutputCap = { max: READ_MAX_BYTES, measure: (text) => Buffer.byteLength(text, "utf8"), label: "256 KB" };

const Params = Type.Object(
  {
    file: Type.String({ description: "Absolute path" }),
    offset: Type.Optional(Type.Integer({ minimum: 1, description: "1-indexed start line (text files only)" })),
    limit: Type.Optional(Type.Integer({ minimum: 1, description: "Number of lines (text files only)" })),
  },
  { additionalProperties: false },
);

export const readFile = defineTool({
  name: "read_file",
  description:
    `Read a file, line-numbered; without offset/limit only the first ${DEFAULT_READ_LINES} lines. ` +
    "Images/audio go to the model if it supports them. Needed before write_file/edit_file.",
  params: Params,
  readOnly: true,
  reaches: (input) => input.file,
  async execute(input, ctx) {
    const absolute = resolveToolPath(ctx.workspace, input.file);
    const guarded = await guardRead(pathPolicyFromContext(ctx), absolute);
    const stats = await statForTool(absolute, "file");
    if (stats.isDirectory()) throw new ToolError("IS_A_DIRECTORY", `${absolute} is a directory, not a file. Use list_dir to see its contents.`);
    if (!stats.isFile()) throw new ToolError("NOT_A_FILE", `${absolute} is not a regular file (device, socket or pipe).`);
    const real = guarded ?? absolute;
    const name = basename(absolute);
    const kind = fileKind(absolute);

    let outcome: ToolOutcome;
    if (kind.kind === "image" || kind.kind === "audio") {
      outcome = await readMedia(ctx, absolute, name, stats.size, kind.kind, kind.mediaType);
    } else if (kind.kind === "binary") {
      outcome = binaryOutcome(name, stats.size);
    } else {
      outcome = await readText(absolute, name, stats.size, input, ctx.signal);
    }
    await recordRead(ctx, real, stats.mtimeMs);
    return { ...outcome, details: { path: absolute, size: stats.size, ...outcome.details } };
  },
});

function binaryOutcome(name: string, size: number): ToolOutcome {
  return { output: `Binary file: ${name} (${formatSize(size)}). Cannot display as text.`, details: { kind: "binary" } };
}

function emptyOutcome(absolute: string): ToolOutcome {
  return { output: systemReminder(`The file ${absolute} exists but has empty contents.`), details: { kind: "text", lines: 0 } };
}

async function readMedia(
  ctx: ToolContext,
  absolute: string,
  name: string,
  size: number,
  kind: "image" | "audio",
  mediaType: string,
): Promise<ToolOutcome> {
  const label = `${kind === "image" ? "Image" : "Audio"} file: ${name} (${formatSize(size)})`;
  const details = { kind, media_type: mediaType };
  if (!ctx.model.input_modalities.includes(kind)) {
    return { output: `${label}. Current model does not support ${kind} input.`, details };
  }
  if (size > MAX_MEDIA_BYTES) {
    return { output: `${label}. Too large to attach (over ${formatSize(MAX_MEDIA_BYTES)}).`, details };
  }
  const data = await readBytes(absolute).catch((error) => {
    throw readFailure(error, absolute);
  });
  return { output: label, attachments: [{ type: kind, media_type: mediaType, data: data.toString("base64") }], details };
}

/**
 * Text, a chunk at a time: every line is counted, only the window is kept (and within it
 * no more than the 256 KB answer can show), so neither a huge file nor one endless line is
 * ever held whole.
 */
async function readText(absolute: string, name: string, size: number, window: TextWindow, signal: AbortSignal): Promise<ToolOutcome> {
  const explicit = window.offset !== undefined || window.limit !== undefined;
  const first = window.offset ?? 1;
  const last = window.limit !== undefined ? first + window.limit - 1 : explicit ? Number.POSITIVE_INFINITY : DEFAULT_READ_LINES;
  const read = await readLineWindow(absolute, { first, last, keepChars: READ_MAX_BYTES, signal }, size).catch((error) => {
    throw readFailure(error, absolute);
  });
  if (signal.aborted) throw new ToolError("CANCELLED", "read_file was cancelled.");
  if (read.binary) return binaryOutcome(name, size);
  if (read.blank) return emptyOutcome(absolute);
  return { output: renderLines(read.lines, window, read.totalLines, first, READ_CAP), details: { kind: "text", lines: read.totalLines } };
}

import { Type } from "../../schema.js";
import { createReadStream } from "node:fs";
import { readFile as readBytes } from "node:fs/promises";
import { createInterface } from "node:readline";
import { basename } from "node:path";
import { defineTool } from "../define.js";
import { ToolError } from "../../errors.js";
import { systemReminder } from "../format.js";
import type { ToolContext, ToolOutcome } from "../types.js";
import { guardRead, pathPolicyFromContext, resolveToolPath } from "../shared/path-guard.js";
import { statForTool, readFailure } from "../shared/fs-errors.js";
import { fileKind, MAX_MEDIA_BYTES } from "../shared/file-kinds.js";
import { recordRead } from "../shared/read-tracker.js";
import { DEFAULT_READ_LINES, MAX_LINE_CHARS, formatSize, looksBinary, renderLines, splitLines, type OutputCap, type TextWindow } from "../shared/text-view.js";

/** Text files above this are streamed line by line instead of loaded whole. */
const STREAM_THRESHOLD_BYTES = 8 * 1024 * 1024;

/**
 * One read_file answer holds at most 256 KB (UTF-8) of numbered lines, whatever offset/limit
 * ask for; past it the answer ends with a footer naming the cap and the lines shown. Far
 * above what 2000 ordinary lines take, so the documented 2000-line default is what users meet.
 */
export const READ_MAX_BYTES = 256 * 1024;
const READ_CAP: OutputCap = { max: READ_MAX_BYTES, measure: (text) => Buffer.byteLength(text, "utf8"), label: "256 KB" };

const Params = Type.Object(
  {
    file: Type.String({ description: "Absolute path to the file (a path relative to the workspace root also works)" }),
    offset: Type.Optional(Type.Integer({ minimum: 1, description: "1-indexed line number to start from (text files only)" })),
    limit: Type.Optional(Type.Integer({ minimum: 1, description: "Number of lines to read (text files only)" })),
  },
  { additionalProperties: false },
);

export const readFile = defineTool({
  name: "read_file",
  description:
    "Read a file. Text comes back line-numbered (`   1 | text`); without offset/limit at most the first " +
    `${DEFAULT_READ_LINES} lines are shown; offset/limit lift that cap (one answer holds at most 256 KB). Images and audio are attached when the model accepts them. ` +
    "Reading a file is required before write_file/edit_file may change it.",
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
    } else if (stats.size > STREAM_THRESHOLD_BYTES) {
      outcome = await readLargeText(absolute, name, stats.size, input);
    } else {
      const buffer = await readBytes(absolute).catch((error) => {
        throw readFailure(error, absolute);
      });
      outcome = renderText(absolute, name, buffer, input);
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

function renderText(absolute: string, name: string, buffer: Buffer, window: TextWindow): ToolOutcome {
  if (looksBinary(buffer)) return binaryOutcome(name, buffer.length);
  const text = buffer.toString("utf8");
  if (text.trim() === "") return emptyOutcome(absolute);
  const lines = splitLines(text);
  return { output: renderLines(lines, window, lines.length, 1, READ_CAP), details: { kind: "text", lines: lines.length } };
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

/** Streams a big text file: counts every line, keeps only the window. */
async function readLargeText(absolute: string, name: string, size: number, window: TextWindow): Promise<ToolOutcome> {
  const explicit = window.offset !== undefined || window.limit !== undefined;
  const first = window.offset ?? 1;
  const last = window.limit !== undefined ? first + window.limit - 1 : explicit ? Number.POSITIVE_INFINITY : DEFAULT_READ_LINES;
  const stream = createReadStream(absolute);
  let head: Buffer | undefined;
  stream.once("data", (chunk) => (head = chunk as Buffer));
  const lines: string[] = [];
  let total = 0;
  let blank = true;
  let kept = 0;
  try {
    for await (const line of createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY })) {
      if (total === 0 && head && looksBinary(head)) {
        stream.destroy();
        return binaryOutcome(name, size);
      }
      total++;
      if (blank && line.trim() !== "") blank = false;
      // Past the output cap nothing more can be shown (bytes >= chars); keep counting only.
      if (total >= first && total <= last && kept <= READ_MAX_BYTES) {
        lines.push(line);
        kept += Math.min(line.length, MAX_LINE_CHARS) + 7;
      }
    }
  } catch (error) {
    throw readFailure(error, absolute);
  }
  if (blank) return emptyOutcome(absolute);
  return { output: renderLines(lines, window, total, first, READ_CAP), details: { kind: "text", lines: total } };
}

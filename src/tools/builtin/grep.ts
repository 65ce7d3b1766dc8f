import { Type } from "../../schema.js";
import { basename, dirname, join } from "node:path";
import { defineTool } from "../define.js";
import { ToolError } from "../../errors.js";
import { displayPath, guardRead, isReadProtected, pathPolicyFromContext, resolveToolPath } from "../shared/path-guard.js";
import { statForTool } from "../shared/fs-errors.js";
import { skippedDirs } from "../shared/file-walk.js";
import { MAX_GREP_LINE_CHARS, type GrepFile } from "../shared/grep-matches.js";
import { ripgrepPath } from "../shared/ripgrep.js";
import { MAX_OUTPUT_CHARS } from "../shared/truncate.js";

const MAX_CONTEXT_LINES = 20;
/** A literal search over at most this many files runs in process even when rg is installed. */
const IN_PROCESS_FILES = 200;
/** Match text found (shown or only counted) before the search stops early. */
const MAX_COLLECT_CHARS = 2_000_000;

const Params = Type.Object(
  {
    pattern: Type.String({ description: "Regex or literal" }),
    path: Type.String({ description: "File or directory" }),
    recursive: Type.Optional(Type.Boolean()),
    case_sensitive: Type.Optional(Type.Boolean({ description: "Case-sensitive match (default: false)" })),
    fixed_strings: Type.Optional(Type.Boolean({ description: "Treat pattern as literal" })),
    include: Type.Optional(Type.String({ description: "Glob to filter files (e.g. *.js)" })),
    context_lines: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_CONTEXT_LINES, description: "Context lines around each match" }),
    ),
  },
  { additionalProperties: false },
);

export const grep = defineTool({
  name: "grep",
  description:
    "Search file contents by regex; returns path:line:text. Skips .git, node_modules and binary files.",
  params: Params,
  readOnly: true,
  reaches: (input) => input.path,
  async execute(input, ctx) {
    const policy = pathPolicyFromContext(ctx);
    const target = resolveToolPath(ctx.workspace, input.path);
    await guardRead(policy, target);
    const stats = await statForTool(target);
    const isFile = !stats.isDirectory();
    if (isFile && !stats.isFile()) throw new ToolError("NOT_A_FILE", `${target} is not a regular file or directory.`);
    const root = isFile ? dirname(target) : target;
    const context = input.context_lines ?? 0;
    const rg = await ripgrepPath(ctx);

    // picomatch and the search engine load on first use, not at start-up.
    const { grepSearch } = await import("../shared/grep-search.js");
    const prefix = displayPath(ctx.workspace, root);
    const result = await grepSearch({
      root,
      file: isFile ? basename(target) : undefined,
      pattern: input.pattern,
      caseSensitive: input.case_sensitive ?? false,
      fixedStrings: input.fixed_strings ?? false,
      include: input.include,
      context,
      recursive: input.recursive ?? false,
      skipDirs: skippedDirs(displayPath(ctx.workspace, target)),
      isProtected: (absolute) => isReadProtected(policy, absolute),
      rg,
      signal: ctx.signal,
      maxCollectChars: MAX_COLLECT_CHARS,
      keepChars: MAX_OUTPUT_CHARS,
      prefixChars: prefix === "." ? 0 : prefix.length + 1,
      inProcessFiles: ctx.services.grepInProcessFiles ?? IN_PROCESS_FILES,
    });
    const engine = result.engine;
    if (ctx.signal.aborted) throw new ToolError("CANCELLED", "grep was cancelled.");

    const show = (path: string) => (prefix === "." ? path : join(prefix, path));
    const rendered = renderMatches(result.files, show, context > 0);
    const where = displayPath(ctx.workspace, target);
    if (result.matches === 0) {
      const hint = isFile || input.recursive ? "" : " Subdirectories were not searched; set recursive to include them.";
      const place = where === "." ? "the workspace root" : where;
      return { output: `No matches found for "${input.pattern}" in ${place}.${hint}`, details: { matches: 0, files: 0, engine } };
    }
    const notes: string[] = [];
    if (rendered.cut) {
      notes.push(
        `[Output truncated at ${MAX_OUTPUT_CHARS} chars: showing ${rendered.shownMatches} of ${result.matches} matching lines in ${result.fileCount} files. Narrow the pattern, path or include glob.]`,
      );
    }
    if (result.partial) notes.push(`[Search stopped early: too many matches. Results are incomplete; narrow the pattern, path or include glob.]`);
    return {
      output: rendered.text + (notes.length ? `\n\n${notes.join("\n")}` : ""),
      details: { matches: result.matches, files: result.fileCount, truncated: rendered.cut || result.partial, engine },
    };
  },
});

/** `path:n:text` for matches, `path-n-text` for context, `--` between separate groups; cut at the answer's cap. */
function renderMatches(files: GrepFile[], show: (path: string) => string, separators: boolean) {
  const out: string[] = [];
  let chars = 0;
  let shownMatches = 0;
  let cut = false;
  for (const file of files) {
    const name = show(file.path);
    let previous = -1;
    for (const line of file.lines) {
      if (separators && out.length > 0 && line.n !== previous + 1) out.push("--");
      previous = line.n;
      const text = line.text.length > MAX_GREP_LINE_CHARS ? `${line.text.slice(0, MAX_GREP_LINE_CHARS)}… [line truncated]` : line.text;
      const rendered = `${name}${line.match ? ":" : "-"}${line.n}${line.match ? ":" : "-"}${text}`;
      if (chars + rendered.length + 1 > MAX_OUTPUT_CHARS) {
        cut = true;
        break;
      }
      out.push(rendered);
      chars += rendered.length + 1;
      if (line.match) shownMatches++;
    }
    if (cut) break;
  }
  return { text: out.join("\n"), shownMatches, cut };
}

import { Type } from "../../schema.js";
import { isAbsolute, relative } from "node:path";
import { defineTool } from "../define.js";
import { ToolError } from "../../errors.js";
import { displayPath, isWithin, pathPolicyFromContext, resolveToolPath } from "../shared/path-guard.js";
import { statForTool } from "../shared/fs-errors.js";
import { ripgrepPath } from "../shared/ripgrep.js";
import { skippedDirs } from "../shared/file-walk.js";
import { GLOB_THREADS_KEY, GlobThreads } from "../shared/glob-thread.js";

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 5000;
/** A pattern that backtracks for this long is stopped (its worker thread is terminated). */
const GLOB_TIMEOUT_MS = 120_000;

const Params = Type.Object(
  {
    pattern: Type.String({ description: "e.g. **/*.js, src/*.ts" }),
    cwd: Type.Optional(Type.String({ description: "Base directory (default: workspace root)" })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, description: `Max results (default: ${DEFAULT_LIMIT})` })),
  },
  { additionalProperties: false },
);

export const glob = defineTool({
  name: "glob",
  description:
    "Find files by glob pattern, newest first; skips .git and node_modules.",
  params: Params,
  readOnly: true,
  timeoutMs: GLOB_TIMEOUT_MS,
  reaches: (input) => input.cwd ?? ".",
  async execute(input, ctx) {
    const cwd = input.cwd === undefined ? ctx.workspace : resolveToolPath(ctx.workspace, input.cwd);
    const cwdStats = await statForTool(cwd, "directory");
    if (!cwdStats.isDirectory()) throw new ToolError("NOT_A_DIRECTORY", `cwd ${cwd} is not a directory.`);
    const pattern = relativePattern(cwd, input.pattern);
    const limit = input.limit ?? DEFAULT_LIMIT;

    const policy = pathPolicyFromContext(ctx);
    const rg = await ripgrepPath(ctx);
    const engine = rg ? "rg" : "node";
    const skipDirs = skippedDirs(displayPath(ctx.workspace, cwd), pattern);
    // Matching runs on a worker thread: a backtracking pattern must not freeze the server.
    // The policy there leaves out the runtime's secret and database files (the DB would always be "newest").
    const threads = ctx.runtime.get(GLOB_THREADS_KEY, () => new GlobThreads());
    const { total, newest } = await threads.run({ cwd, pattern, skipDirs, rg, limit, policy }, ctx.signal);
    if (ctx.signal.aborted) throw new ToolError("CANCELLED", "glob was cancelled.");
    const shown = newest.map((entry) => entry.path);

    if (shown.length === 0) {
      return { output: `No files found matching "${input.pattern}" in ${cwd}.`, details: { cwd, total: 0, engine } };
    }
    const footer =
      total > shown.length
        ? `\n\n(Showing ${shown.length} of ${total} matching files, newest first. Narrow the pattern or raise limit to see more.)`
        : "";
    return { output: shown.join("\n") + footer, details: { cwd, total, shown: shown.length, truncated: total > shown.length, engine } };
  },
});

/** An absolute pattern inside cwd becomes relative; one outside it cannot be searched from cwd. */
function relativePattern(cwd: string, pattern: string): string {
  if (!isAbsolute(pattern)) return pattern;
  if (!isWithin(cwd, pattern)) {
    throw new ToolError("VALIDATION_ERROR", `pattern ${pattern} is absolute and not under cwd ${cwd}; pass its folder as cwd and a relative pattern.`);
  }
  return relative(cwd, pattern);
}

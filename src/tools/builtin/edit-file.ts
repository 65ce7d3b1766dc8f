import { Type } from "../../schema.js";
import { readFile } from "node:fs/promises";
import { defineTool } from "../define.js";
import { ToolError } from "../../errors.js";
import { commitWrite, prepareWrite } from "../shared/file-write.js";
import { resolveToolPath } from "../shared/path-guard.js";
import { readFailure } from "../shared/fs-errors.js";
import { applyReplacement, countLines, describeMiss, lineAt, linesAt, numberedRegion, planReplacement } from "../shared/edit-match.js";

/** Line numbers listed in a MATCH_NOT_UNIQUE error. */
const MAX_LISTED_LINES = 20;
/** Lines of context around the edit in the confirmation snippet. */
const SNIPPET_CONTEXT = 2;
const MAX_SNIPPET_LINES = 12;

const Params = Type.Object(
  {
    file: Type.String({ description: "Absolute path" }),
    old_string: Type.String({ description: "Exact text; must be unique unless replace_all" }),
    new_string: Type.String(),
    replace_all: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const editFile = defineTool({
  name: "edit_file",
  description:
    "Replace old_string with new_string in a file. old_string must match EXACTLY, every space, tab and newline " +
    "(copy from read_file, without the line-number prefix). The file must have been read with read_file.",
  params: Params,
  reaches: (input) => input.file,
  touches: (input, scope) => [resolveToolPath(scope.workspace, input.file)],
  async execute(input, ctx) {
    if (input.old_string === "") {
      throw new ToolError("VALIDATION_ERROR", "old_string must not be empty. To create a file or replace its whole content, use write_file.");
    }
    if (input.old_string === input.new_string) {
      throw new ToolError("VALIDATION_ERROR", "old_string and new_string are identical; there is nothing to change.");
    }
    const target = await prepareWrite(ctx, input.file);
    if (!target.exists) throw new ToolError("FILE_NOT_FOUND", `No such file: ${target.requested}. Use write_file to create it.`);
    const content = await readFile(target.real, "utf8").catch((error) => {
      throw readFailure(error, target.requested);
    });

    const plan = planReplacement(content, input.old_string, input.new_string, MAX_LISTED_LINES);
    if (plan.count === 0) {
      const closest = describeMiss(content, input.old_string);
      throw new ToolError("MATCH_NOT_FOUND", `old_string not found in ${target.requested}.${closest ? `\n\n${closest}` : ""}`);
    }
    if (plan.count > 1 && !input.replace_all) {
      const listed = linesAt(content, plan.positions).join(", ") + (plan.count > MAX_LISTED_LINES ? ", …" : "");
      throw new ToolError(
        "MATCH_NOT_UNIQUE",
        `old_string appears ${plan.count} times in ${target.requested} (lines ${listed}). Include more surrounding context to make it unique, or set replace_all to true.`,
      );
    }

    const at = plan.positions[0]!;
    let shown: string;
    if (input.replace_all) {
      const updated = applyReplacement(content, plan, true);
      await commitWrite(ctx, target, updated);
      shown = snippet(updated, at, plan.replace);
    } else {
      // Written as the three parts it is made of: the edited file is never built as one more copy.
      await commitWrite(ctx, target, [content.slice(0, at), plan.replace, content.slice(at + plan.search.length)]);
      shown = snippetOfEdit(content, at, plan.search.length, plan.replace);
    }
    const replacements = input.replace_all ? plan.count : 1;
    return {
      output: `Edited ${target.requested}: ${replacements} replacement${replacements === 1 ? "" : "s"}.\n${shown}`,
      details: { path: target.requested, realPath: target.real, replacements, crlf: plan.search !== input.old_string },
    };
  },
});

/**
 * The first edited region with a little context, as read_file would number it. `text` has
 * `inserted` at `at`; its first line is line `firstLine` of the file.
 */
function snippet(text: string, at: number, inserted: string, firstLine = 1): string {
  const first = firstLine - 1 + lineAt(text, at);
  const last = first + Math.max(0, countLines(inserted) - 1);
  const from = first - SNIPPET_CONTEXT;
  const to = Math.min(last + SNIPPET_CONTEXT, from + MAX_SNIPPET_LINES - 1);
  return numberedRegion(text, from - firstLine + 1, to - firstLine + 1, firstLine - 1);
}

/** The snippet of one replacement, from the lines around it in the old text and the inserted text. */
function snippetOfEdit(content: string, at: number, removed: number, inserted: string): string {
  let start = at;
  for (let back = 0; back <= SNIPPET_CONTEXT; back++) {
    const nl = start > 0 ? content.lastIndexOf("\n", start - 1) : -1;
    if (nl === -1) {
      start = -1;
      break;
    }
    start = nl;
  }
  start += 1;
  let end = at + removed;
  for (let ahead = 0; ahead < MAX_SNIPPET_LINES + SNIPPET_CONTEXT && end !== -1; ahead++) end = content.indexOf("\n", end + (ahead > 0 ? 1 : 0));
  const around = content.slice(start, at) + inserted + content.slice(at + removed, end === -1 ? content.length : end);
  return snippet(around, at - start, inserted, lineAt(content, start));
}

import { Type } from "../../schema.js";
import { defineTool } from "../define.js";
import { commitWrite, prepareWrite } from "../shared/file-write.js";
import { resolveToolPath } from "../shared/path-guard.js";
import { formatSize } from "../shared/text-view.js";

const Params = Type.Object(
  {
    file: Type.String({ description: "Absolute path" }),
    content: Type.String(),
  },
  { additionalProperties: false },
);

export const writeFile = defineTool({
  name: "write_file",
  description:
    "Create or overwrite a file (parent dirs created). An existing file must have been read with read_file, and unchanged on disk since. Atomic.",
  params: Params,
  reaches: (input) => input.file,
  touches: (input, scope) => [resolveToolPath(scope.workspace, input.file)],
  async execute(input, ctx) {
    const target = await prepareWrite(ctx, input.file);
    await commitWrite(ctx, target, input.content);
    const bytes = Buffer.byteLength(input.content);
    const lines = input.content === "" ? 0 : input.content.split("\n").length - (input.content.endsWith("\n") ? 1 : 0);
    const verb = target.exists ? "Wrote" : "Created";
    const via = target.real === target.requested ? "" : ` (through symlink to ${target.real})`;
    return {
      output: `${verb} ${target.requested}${via}: ${lines} lines, ${formatSize(bytes)}.`,
      details: { path: target.requested, realPath: target.real, created: !target.exists, bytes, lines },
    };
  },
});

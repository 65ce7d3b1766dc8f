import { lstatSync, statSync, type Stats } from "node:fs";
import { ToolError } from "../../errors.js";

/**
 * stat() that fails with the file tools' codes: FILE_NOT_FOUND, BROKEN_SYMLINK, PERMISSION_DENIED.
 * A synchronous stat: a few µs, where the promise API's trip through the thread pool took 0.1 ms or more.
 */
export async function statForTool(absolute: string, what: "file" | "directory" | "path" = "path"): Promise<Stats> {
  try {
    return statSync(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR" || code === "ELOOP") {
      const link = lstatSync(absolute, { throwIfNoEntry: false });
      if (link?.isSymbolicLink()) {
        throw new ToolError("BROKEN_SYMLINK", `${absolute} is a broken symbolic link (its target does not exist or loops).`);
      }
      throw new ToolError("FILE_NOT_FOUND", `No such ${what}: ${absolute}`);
    }
    if (code === "EACCES" || code === "EPERM") throw new ToolError("PERMISSION_DENIED", `Cannot access ${absolute}: permission denied.`, { cause: error });
    throw new ToolError("TOOL_ERROR", `Cannot access ${absolute}: ${(error as Error).message}`, { cause: error });
  }
}

/** Maps an fs error met while reading to a ToolError. */
export function readFailure(error: unknown, absolute: string): ToolError {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EACCES" || code === "EPERM") return new ToolError("PERMISSION_DENIED", `Cannot read ${absolute}: permission denied.`, { cause: error });
  if (code === "ENOENT") return new ToolError("FILE_NOT_FOUND", `No such file: ${absolute}`, { cause: error });
  if (code === "EISDIR") return new ToolError("IS_A_DIRECTORY", `${absolute} is a directory.`, { cause: error });
  return new ToolError("TOOL_ERROR", `Cannot read ${absolute}: ${(error as Error).message}`, { cause: error });
}

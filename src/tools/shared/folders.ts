import { readdirSync, realpathSync, statSync, type Stats } from "node:fs";
import { join } from "node:path";

/** Sub-folders of a dir, sorted (symlinks to folders count, dot-folders do not); none if the dir is absent. */
export function listFolders(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const entry of entries) {
    if (entry.name.startsWith(".")) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory() || (entry.isSymbolicLink() && statOrNull(path)?.isDirectory())) out.push(path);
  }
  return out.sort();
}

export function statOrNull(path: string): Stats | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}

/** The real location of an existing path (symlinks resolved), or null when it is not there. */
export function realpathOrNull(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/** Changes when the file is replaced, resized or touched; "-" when it is absent. */
export function fileStamp(stat: Stats | null): string {
  return stat ? `${stat.ino}:${stat.size}:${stat.mtimeMs}` : "-";
}

import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

export interface TempWorkspace {
  /** Real (symlink-free) absolute path of the workspace root. */
  root: string;
  path(...parts: string[]): string;
  write(relative: string, content: string | Buffer): string;
  symlink(relative: string, target: string): string;
  cleanup(): void;
  [Symbol.dispose](): void;
}

/** A fresh temp folder with optional files and symlinks; removed by cleanup(). */
export function tmpWorkspace(init: { files?: Record<string, string | Buffer>; symlinks?: Record<string, string> } = {}): TempWorkspace {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "veil-ws-")));
  const ws: TempWorkspace = {
    root,
    path: (...parts) => join(root, ...parts),
    write(relative, content) {
      const file = join(root, relative);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, content);
      return file;
    },
    symlink(relative, target) {
      const link = join(root, relative);
      mkdirSync(dirname(link), { recursive: true });
      symlinkSync(target, link);
      return link;
    },
    cleanup: () => rmSync(root, { recursive: true, force: true }),
    [Symbol.dispose]: () => rmSync(root, { recursive: true, force: true }),
  };
  for (const [rel, content] of Object.entries(init.files ?? {})) ws.write(rel, content);
  for (const [rel, target] of Object.entries(init.symlinks ?? {})) ws.symlink(rel, target);
  return ws;
}

import { chmod, copyFile, lstat, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import type { FileChange } from "../../store/store.js";
import { sha256 } from "./chunking.js";
import { sameStamp, scanWorkspace, stampOf, type FileStamp } from "./scan.js";

/** One file a settle found changed, with what it was before (null: it did not exist). */
export interface SeenChange {
  path: string;
  change: FileChange;
  before: { data: Buffer; mode: number } | null;
}

/**
 * What the workspace looked like at the last settle, kept beside Veil's home: a manifest
 * of every file's stamp (size, mtime, ctime, inode, mode) and a mirror copy of each file.
 * A settle scans the stamps, and for each file whose stamp moved reads its old content
 * from the mirror (the only copy of what bash overwrote or removed) and takes the new one
 * in. Changes are whatever happened since the previous settle, by any tool, shell or
 * background process: a run settles at each turn's end, so what a process left running
 * does after that belongs to the next turn. Settles of one workspace run one at a time.
 */
export class WorkspaceTracker {
  private stamps: Map<string, FileStamp> | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly mirror: string;
  private readonly manifestPath: string;
  private readonly skip: ReadonlySet<string>;

  /** `ignored`: folders never scanned (Veil's home, when the workspace holds it); the state folder is always one. */
  constructor(
    readonly root: string,
    private readonly stateDir: string,
    ignored: readonly string[] = [],
  ) {
    this.root = resolve(root);
    this.mirror = join(stateDir, "mirror");
    this.manifestPath = join(stateDir, "manifest.json");
    this.skip = new Set([stateDir, ...ignored].map((dir) => resolve(dir)));
  }

  /** The baseline exists (read back after a restart, else taken now): call before a turn's tools run. */
  ready(): Promise<void> {
    return this.serial(async () => void (await this.baseline()));
  }

  /** The files changed since the last settle, with their content before; the mirror takes the new state in. */
  settle(): Promise<SeenChange[]> {
    return this.serial(async () => {
      const known = await this.baseline();
      const now = await scanWorkspace(this.root, this.skip);
      const changes: SeenChange[] = [];
      for (const [path, stamp] of now) {
        const old = known.get(path);
        if (old && sameStamp(old, stamp)) continue;
        const change = await this.takeIn(path, old, stamp);
        if (change) changes.push(change);
      }
      for (const [path, old] of known) {
        if (now.has(path)) continue;
        const before = await this.mirrored(path, old);
        await rm(this.mirrorPath(path), { force: true });
        known.delete(path);
        if (before) changes.push({ path, change: "deleted", before });
      }
      if (changes.length > 0 || now.size !== known.size) await this.saveManifest();
      return changes.sort((a, b) => (a.path < b.path ? -1 : 1));
    });
  }

  /** The files a revert just wrote or removed, taken in as they are now without being reported. */
  absorb(paths: readonly string[]): Promise<void> {
    return this.serial(async () => {
      const known = await this.baseline();
      for (const path of paths) {
        const stat = await lstat(join(this.root, path)).catch(() => null);
        if (stat?.isFile()) {
          await this.copyIn(path);
          known.set(path, stampOf(stat));
        } else {
          known.delete(path);
          await rm(this.mirrorPath(path), { force: true });
        }
      }
      await this.saveManifest();
    });
  }

  /** A changed or new file: the mirror's old copy becomes the change's before, the file's new content the mirror's. */
  private async takeIn(path: string, old: FileStamp | undefined, stamp: FileStamp): Promise<SeenChange | null> {
    const before = old ? await this.mirrored(path, old) : null;
    const copied = await this.copyIn(path);
    const known = this.stamps!;
    if (!copied) return null; // gone again since the scan
    known.set(path, stamp);
    if (!before) return { path, change: "added", before: null };
    // A rewrite with the same bytes and mode is no change.
    if (before.mode === stamp.mode && sha256(before.data) === sha256(copied)) return null;
    return { path, change: "modified", before };
  }

  private async mirrored(path: string, stamp: FileStamp): Promise<{ data: Buffer; mode: number } | null> {
    const data = await readFile(this.mirrorPath(path)).catch(() => null);
    return data && { data, mode: stamp.mode };
  }

  /** Copies the workspace file into the mirror; returns its bytes (null when it is gone). */
  private async copyIn(path: string): Promise<Buffer | null> {
    const target = this.mirrorPath(path);
    try {
      await mkdir(dirname(target), { recursive: true });
      await copyFile(join(this.root, path), target);
      await chmod(target, 0o600);
      return await readFile(target);
    } catch {
      return null;
    }
  }

  private async baseline(): Promise<Map<string, FileStamp>> {
    if (this.stamps) return this.stamps;
    const saved = await readFile(this.manifestPath, "utf8").then((text) => JSON.parse(text) as Record<string, FileStamp>, () => null);
    if (saved) {
      this.stamps = new Map(Object.entries(saved));
      return this.stamps;
    }
    // The first turn ever in this workspace: every file is copied once.
    const now = await scanWorkspace(this.root, this.skip);
    await rm(this.mirror, { recursive: true, force: true });
    this.stamps = new Map();
    for (const [path, stamp] of now) if (await this.copyIn(path)) this.stamps.set(path, stamp);
    await this.saveManifest();
    return this.stamps;
  }

  private async saveManifest(): Promise<void> {
    await mkdir(this.stateDir, { recursive: true });
    const temp = `${this.manifestPath}.tmp`;
    await writeFile(temp, JSON.stringify(Object.fromEntries(this.stamps ?? [])));
    await rename(temp, this.manifestPath);
  }

  private mirrorPath(path: string): string {
    return join(this.mirror, path);
  }

  private serial<T>(body: () => Promise<T>): Promise<T> {
    const result = this.queue.then(body);
    this.queue = result.catch(() => undefined);
    return result;
  }
}

/** Where the tracker of a workspace keeps its state: under Veil's home, one folder per workspace path. */
export function trackerStateDir(homeDir: string, workspace: string): string {
  return join(homeDir, "checkpoints", sha256(Buffer.from(resolve(workspace))).slice(0, 16));
}

import { lstatSync, readFileSync, rmSync } from "node:fs";
import { rm } from "node:fs/promises";
import { setImmediate as nextTurn } from "node:timers/promises";
import { join, resolve } from "node:path";
import type { FileChange } from "../../store/store.js";
import { sha256 } from "./chunking.js";
import { FolderWatch } from "./folder-watch.js";
import { overwrite } from "./overwrite.js";
import { StampManifest } from "./manifest.js";
import { readFolder, sameStamp, scanTree, stampOf, type FileStamp } from "./scan.js";

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
 * A watch on each folder tells which folders saw an event since the last settle: only those
 * are read again, none when nothing happened, and every folder when the watch cannot be
 * trusted (see FolderWatch).
 */
export class WorkspaceTracker {
  private stamps: Map<string, FileStamp> | null = null;
  /** The folders the last scans read (relative, "" for the root). */
  private folders = new Set<string>();
  private readonly watch: FolderWatch;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly mirror: string;
  private readonly manifest: StampManifest;
  private readonly skip: ReadonlySet<string>;

  /** `ignored`: folders never scanned (Veil's home, when the workspace holds it); the state folder is always one. `now`: the clock of the periodic full scan. */
  constructor(
    readonly root: string,
    stateDir: string,
    ignored: readonly string[] = [],
    now: () => number = Date.now,
  ) {
    this.root = resolve(root);
    this.mirror = join(stateDir, "mirror");
    this.manifest = new StampManifest(stateDir);
    this.skip = new Set([stateDir, ...ignored].map((dir) => resolve(dir)));
    this.watch = new FolderWatch(this.root, join(stateDir, "fence"), now);
  }

  /** Stops watching the workspace. */
  close(): void {
    this.watch.close();
  }

  /** The baseline exists (read back after a restart, else taken now): call before a turn's tools run. */
  ready(): Promise<void> {
    return this.serial(async () => void (await this.baseline()));
  }

  /** The files changed since the last settle, with their content before; the mirror takes the new state in. */
  settle(): Promise<SeenChange[]> {
    return this.serial(async () => {
      const known = await this.baseline();
      const plan = await this.watch.take();
      if (!plan.full && plan.folders.size === 0) return [];
      const seen = await (plan.full ? this.scanAll() : this.scanSome(plan.folders)).catch((error: unknown) => {
        this.watch.invalidate();
        throw error;
      });
      const now = seen.files;
      const changes: SeenChange[] = [];
      let taken = 0;
      for (const [path, stamp] of now) {
        const old = known.get(path);
        if (old && sameStamp(old, stamp)) continue;
        const change = this.takeIn(path, old, stamp);
        if (change) changes.push(change);
        if (++taken % COPY_BATCH === 0) await nextTurn();
      }
      for (const [path, old] of known) {
        if (now.has(path) || !seen.covers(path)) continue;
        const before = this.mirrored(path, old);
        rmSync(this.mirrorPath(path), { force: true });
        this.forget(path);
        if (before) changes.push({ path, change: "deleted", before });
      }
      await this.manifest.flush(known);
      return changes.sort((a, b) => (a.path < b.path ? -1 : 1));
    });
  }

  /** The files a revert just wrote or removed, taken in as they are now without being reported. */
  absorb(paths: readonly string[]): Promise<void> {
    return this.serial(async () => {
      const known = await this.baseline();
      for (const path of paths) {
        const stat = lstatSync(join(this.root, path), { throwIfNoEntry: false });
        if (stat?.isFile() && this.copyIn(path)) this.remember(path, stampOf(stat));
        else {
          this.forget(path);
          rmSync(this.mirrorPath(path), { force: true });
        }
      }
      await this.manifest.flush(known);
    });
  }

  /** A changed or new file: the mirror's old copy becomes the change's before, the file's new content the mirror's. */
  private takeIn(path: string, old: FileStamp | undefined, stamp: FileStamp): SeenChange | null {
    const before = old ? this.mirrored(path, old) : null;
    const copied = this.copyIn(path);
    if (!copied) return null; // gone again since the scan
    this.remember(path, stamp);
    if (!before) return { path, change: "added", before: null };
    // A rewrite with the same bytes and mode is no change.
    if (before.mode === stamp.mode && sha256(before.data) === sha256(copied)) return null;
    return { path, change: "modified", before };
  }

  /*
   * The mirror's and the workspace's files are read and written with synchronous calls, as
   * the scan's stats are: a promise per call costs several times the call on a loaded
   * machine (a revert of 100 files took 0.6–1.6 s at load 13 with promises). Loops over many
   * files give the event loop a turn between batches.
   */
  private mirrored(path: string, stamp: FileStamp): { data: Buffer; mode: number } | null {
    let data: Buffer | null;
    try {
      data = readFileSync(this.mirrorPath(path));
    } catch {
      data = null;
    }
    return data && { data, mode: stamp.mode };
  }

  /** Copies the workspace file into the mirror (readable by its owner only); returns its bytes (null when it is gone). */
  private copyIn(path: string): Buffer | null {
    const target = this.mirrorPath(path);
    try {
      const data = readFileSync(join(this.root, path));
      overwrite(target, data, 0o600);
      return data;
    } catch {
      return null;
    }
  }

  private remember(path: string, stamp: FileStamp): void {
    this.stamps!.set(path, stamp);
    this.manifest.changed(path, stamp);
  }

  private forget(path: string): void {
    this.stamps!.delete(path);
    this.manifest.changed(path, null);
  }

  private async baseline(): Promise<Map<string, FileStamp>> {
    if (this.stamps) return this.stamps;
    const saved = await this.manifest.load();
    if (saved) {
      this.stamps = saved;
      return this.stamps;
    }
    // The first turn ever in this workspace: every file is copied once.
    const now = (await this.scanAll()).files;
    await rm(this.mirror, { recursive: true, force: true });
    this.stamps = new Map();
    let copied = 0;
    for (const [path, stamp] of now) {
      if (this.copyIn(path)) this.stamps.set(path, stamp);
      if (++copied % COPY_BATCH === 0) await nextTurn();
    }
    await this.manifest.snapshot(this.stamps);
    return this.stamps;
  }

  /** Every folder, each watched before it is read. */
  private async scanAll(): Promise<{ files: Map<string, FileStamp>; covers: (path: string) => boolean }> {
    const result = await scanTree(this.root, this.skip, "", (folder) => this.watch.renew(folder));
    this.folders = result.folders;
    this.watch.sync(result.folders);
    this.watch.fullScanned();
    return { files: result.files, covers: () => true };
  }

  /**
   * The folders that saw events: the files right in each, a new subfolder read whole (watched
   * first), a folder gone with everything that was under it. `covers` says which known paths
   * the result speaks for (a known path it covers but did not find is gone).
   */
  private async scanSome(dirty: ReadonlySet<string>): Promise<{ files: Map<string, FileStamp>; covers: (path: string) => boolean }> {
    const files = new Map<string, FileStamp>();
    const shallow = new Set<string>();
    const deep = new Set<string>();
    let foldersChanged = false;
    // Parents first: a new folder read whole is not read again for its own events.
    for (const folder of [...dirty].sort()) {
      if (withinAny(folder, deep)) continue;
      this.watch.renew(folder);
      const read = readFolder(this.root, this.skip, folder);
      if (!read) {
        deep.add(folder);
        foldersChanged = this.dropFolder(folder) || foldersChanged;
        continue;
      }
      shallow.add(folder);
      for (const [path, stamp] of read.files) files.set(path, stamp);
      const present = new Set(read.folders);
      for (const sub of read.folders) {
        if (this.folders.has(sub)) continue;
        deep.add(sub);
        foldersChanged = true;
        await scanTree(this.root, this.skip, sub, (f) => this.watch.renew(f), { files, folders: this.folders });
      }
      for (const sub of [...this.folders]) {
        if (parentOf(sub) !== folder || sub === folder || present.has(sub)) continue;
        deep.add(sub);
        foldersChanged = this.dropFolder(sub) || foldersChanged;
      }
    }
    if (foldersChanged) this.watch.sync(this.folders);
    return { files, covers: (path) => shallow.has(parentOf(path)) || withinAny(parentOf(path), deep) };
  }

  /** Forgets a folder and every folder under it; true when it knew one. */
  private dropFolder(folder: string): boolean {
    let dropped = false;
    for (const known of [...this.folders]) {
      if (known !== folder && !known.startsWith(`${folder}/`)) continue;
      this.folders.delete(known);
      dropped = true;
    }
    return dropped;
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

/** Files copied into the mirror between two turns of the event loop (a first turn copies the whole workspace). */
const COPY_BATCH = 64;

/** The folder holding a relative path ("" for the root's own files). */
function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "" : path.slice(0, slash);
}

/** Whether `folder` is one of `folders` or lies under one. */
function withinAny(folder: string, folders: ReadonlySet<string>): boolean {
  if (folders.size === 0) return false;
  for (let at = folder; ; at = parentOf(at)) {
    if (folders.has(at)) return true;
    if (at === "") return false;
  }
}

/** Where the tracker of a workspace keeps its state: under Veil's home, one folder per workspace path. */
export function trackerStateDir(homeDir: string, workspace: string): string {
  return join(homeDir, "checkpoints", sha256(Buffer.from(resolve(workspace))).slice(0, 16));
}

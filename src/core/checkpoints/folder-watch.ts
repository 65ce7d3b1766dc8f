import { mkdirSync, readFileSync, rmSync, watch, writeFileSync, type FSWatcher } from "node:fs";
import { basename, join } from "node:path";

/** What the next settle has to look at: every folder, or only those that saw an event. */
export type ScanPlan = { full: true } | { full: false; folders: ReadonlySet<string> };

/** A full scan at least this often: a writer no watch sees (another machine on a network file system, a write through mmap) waits at most this long. */
export const FULL_SCAN_EVERY_MS = 60_000;

/**
 * One inotify watch (fs.watch, not recursive) per tracked folder, each marking its folder
 * dirty on any event: a settle then reads only the dirty folders, and none when nothing
 * happened. The kernel queues an event before the write returns, so by the time a tool's
 * result has come back to this process its events are queued; they are read in order (one
 * inotify queue serves every watch of the process), so a settle writes a fence file in a
 * folder of its own and takes the plan once the fence's event arrived: every event queued
 * before it has been seen by then. A full scan is planned when the watches cannot be trusted: before
 * the first settle, after a watch failed (no inotify, the watch limit reached), after a burst
 * of events that could have overflowed the kernel's queue (lost events are not reported to
 * Node), and at least every FULL_SCAN_EVERY_MS.
 */
export class FolderWatch {
  /** Each watched folder's watch; stale once an event named the folder itself (it was removed or moved away). */
  private readonly watchers = new Map<string, { watcher: FSWatcher; stale: boolean }>();
  private dirty = new Set<string>();
  private events = 0;
  private broken = false;
  private needsFull = true;
  private lastFull = Number.NEGATIVE_INFINITY;
  private readonly burst = Math.max(64, Math.floor(inotifyQueueLimit() / 4));
  private fenceWatcher: FSWatcher | null = null;
  private fences = 0;
  /** The fence file a settle waits for, and how it is told. */
  private awaited: { name: string; arrived: (ok: boolean) => void } | null = null;

  /** `fenceDir`: a folder of the tracker's own (outside the scans) for the fence files. */
  constructor(
    private readonly root: string,
    private readonly fenceDir: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** Watches `folder` (relative, "" for the root) unless it is watched already; a failure to watch (no inotify, the limit reached) plans full scans from then on. */
  private add(folder: string): void {
    if (this.broken || this.watchers.has(folder)) return;
    const path = folder ? join(this.root, folder) : this.root;
    const own = basename(path);
    try {
      // An event about the watched folder itself carries the folder's own name (inotify's IN_DELETE_SELF, IN_MOVE_SELF).
      const watcher = watch(path, { persistent: false }, (_event, name) => {
        if (name === own) entry.stale = true;
        this.mark(folder);
      });
      const entry = { watcher, stale: false };
      // A watch that failed later (its folder went away) is dropped; the full scan it plans watches again what is there.
      watcher.on("error", () => {
        watcher.close();
        this.watchers.delete(folder);
        this.mark(folder);
        this.needsFull = true;
      });
      this.watchers.set(folder, entry);
    } catch (error) {
      // A folder gone since it was listed is no failure of the watches; its parent saw it go.
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      this.fail();
    }
  }

  /**
   * Watches a folder about to be read (a new one, or one that saw events). A folder removed
   * (or moved away) and made again under its name is another folder, which the old watch
   * does not see, so it gets a new one. (A file in it named like the folder also marks it
   * stale: that costs a new watch, nothing more.)
   */
  renew(folder: string): void {
    const entry = this.watchers.get(folder);
    if (entry && !entry.stale) return;
    entry?.watcher.close();
    this.watchers.delete(folder);
    this.add(folder);
  }

  /** Stops watching every folder not in `folders` (gone since), and watches the new ones. */
  sync(folders: ReadonlySet<string>): void {
    for (const [folder, { watcher }] of this.watchers) {
      if (folders.has(folder)) continue;
      watcher.close();
      this.watchers.delete(folder);
    }
    for (const folder of folders) this.add(folder);
  }

  /** What to scan now; the marks are taken (a mark after this goes to the next plan). */
  async take(): Promise<ScanPlan> {
    const fenced = await this.fence();
    const full = !fenced || this.broken || this.needsFull || this.events >= this.burst || this.now() - this.lastFull >= FULL_SCAN_EVERY_MS;
    const folders = this.dirty;
    this.dirty = new Set();
    this.events = 0;
    return full ? { full: true } : { full: false, folders };
  }

  /** A full scan ended well (its folders were watched before they were read): partial scans may follow. */
  fullScanned(): void {
    this.needsFull = false;
    this.lastFull = this.now();
  }

  /** The next plan is a full scan (a partial scan failed). */
  invalidate(): void {
    this.needsFull = true;
  }

  close(): void {
    for (const { watcher } of this.watchers.values()) watcher.close();
    this.watchers.clear();
    this.fenceWatcher?.close();
    this.fenceWatcher = null;
    this.awaited?.arrived(false);
  }

  /** Writes a new fence file and waits for its event (false: no watch, or no event within FENCE_TIMEOUT_MS). */
  private fence(): Promise<boolean> {
    if (this.broken || this.watchers.size === 0) return Promise.resolve(false);
    try {
      if (!this.fenceWatcher) {
        mkdirSync(this.fenceDir, { recursive: true });
        this.fenceWatcher = watch(this.fenceDir, { persistent: false }, (_event, name) => {
          if (this.awaited && name === this.awaited.name) this.awaited.arrived(true);
        });
        this.fenceWatcher.on("error", () => this.fail());
      }
      const name = `fence-${++this.fences}`;
      rmSync(join(this.fenceDir, `fence-${this.fences - 1}`), { force: true });
      return new Promise((resolve) => {
        // Not unref-ed: the watches do not hold the process open, the wait must (a one-shot run has nothing else then).
        const timer = setTimeout(() => arrived(false), FENCE_TIMEOUT_MS);
        const arrived = (ok: boolean) => {
          clearTimeout(timer);
          this.awaited = null;
          resolve(ok);
        };
        this.awaited = { name, arrived };
        writeFileSync(join(this.fenceDir, name), "");
      });
    } catch {
      return Promise.resolve(false);
    }
  }

  private mark(folder: string): void {
    this.events++;
    this.dirty.add(folder);
  }

  private fail(): void {
    this.broken = true;
    this.close();
  }
}

/** How long a settle waits for its fence's event before it reads every folder instead. */
const FENCE_TIMEOUT_MS = 2_000;

/** How many events the kernel keeps unread per inotify instance before it drops them (16384 unless tuned). */
function inotifyQueueLimit(): number {
  try {
    return Number(readFileSync("/proc/sys/fs/inotify/max_queued_events", "utf8").trim()) || 16_384;
  } catch {
    return 16_384;
  }
}

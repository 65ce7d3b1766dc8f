import { appendFile, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { FileStamp } from "./scan.js";

/** Journal lines kept before the next flush writes a whole snapshot instead. */
const COMPACT_AFTER_LINES = 200;

type Entries = [path: string, stamp: FileStamp | null][];

/**
 * The stamps of the last settle, kept on disk so a restart compares against them: a
 * snapshot (`manifest.json`) and a journal of the settles since (`manifest.log`, a line of
 * changed stamps each). A settle that changed 10 of 5,000 files appends one short line
 * instead of writing the 5,000 again. Each line carries the snapshot's generation: lines
 * of an older snapshot (a crash between the snapshot and the journal's removal) are
 * skipped, and a line cut short by a crash ends the journal.
 */
export class StampManifest {
  private pending = new Map<string, FileStamp | null>();
  private generation = 0;
  private lines = 0;
  private readonly snapshotPath: string;
  private readonly journalPath: string;

  constructor(private readonly dir: string) {
    this.snapshotPath = join(dir, "manifest.json");
    this.journalPath = join(dir, "manifest.log");
  }

  /** The stamps as last saved, or null when none were. */
  async load(): Promise<Map<string, FileStamp> | null> {
    const saved = await readFile(this.snapshotPath, "utf8").then((text) => JSON.parse(text) as { generation?: number; stamps?: Record<string, FileStamp> }, () => null);
    if (!saved) return null;
    this.generation = saved.generation ?? 0;
    const stamps = new Map(Object.entries(saved.stamps ?? {}));
    const journal = await readFile(this.journalPath, "utf8").catch(() => "");
    for (const line of journal.split("\n")) {
      if (!line) continue;
      let parsed: [number, Entries];
      try {
        parsed = JSON.parse(line) as [number, Entries];
      } catch {
        break;
      }
      if (parsed[0] !== this.generation) continue;
      for (const [path, stamp] of parsed[1]) {
        if (stamp) stamps.set(path, stamp);
        else stamps.delete(path);
      }
      this.lines++;
    }
    return stamps;
  }

  /** A path's stamp moved (null: it is no longer tracked); saved at the next flush. */
  changed(path: string, stamp: FileStamp | null): void {
    this.pending.set(path, stamp);
  }

  /** Saves what changed since the last flush: a journal line, or a snapshot of `all` once the journal is long. */
  async flush(all: ReadonlyMap<string, FileStamp>): Promise<void> {
    if (this.pending.size === 0) return;
    if (this.lines >= COMPACT_AFTER_LINES) return this.snapshot(all);
    await mkdir(this.dir, { recursive: true });
    await appendFile(this.journalPath, `${JSON.stringify([this.generation, [...this.pending]])}\n`);
    this.pending.clear();
    this.lines++;
  }

  /** Writes every stamp as a new snapshot and drops the journal. */
  async snapshot(all: ReadonlyMap<string, FileStamp>): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const temp = `${this.snapshotPath}.tmp`;
    await writeFile(temp, JSON.stringify({ generation: this.generation + 1, stamps: Object.fromEntries(all) }));
    await rename(temp, this.snapshotPath);
    this.generation++;
    this.pending.clear();
    this.lines = 0;
    await rm(this.journalPath, { force: true });
  }
}

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Disposable } from "../types.js";
import { shellDirPrefix } from "../shared/leftovers.js";
import type { ChildPool, ChildPoolOptions } from "./pool.js";

/** What distinguishes one pool from the shared defaults: its sandbox, or its environment. */
export type PoolSettings = Partial<Pick<ChildPoolOptions, "sandbox" | "env">>;

interface Entry {
  pool: Promise<ChildPool>;
  ready?: ChildPool;
  /** A private folder made for the pool's sandbox. */
  folder?: Promise<string>;
}

/**
 * The runtime's pools of custom-tool processes, one per key (see source.ts: the shared
 * pool, and one per agent with a sandbox or env of its own). A sandboxed pool's private
 * folder ($HOME, /tmp) lives in the temp dir under the shells' prefix, so a killed
 * server's folders are cleared like its shells' (leftovers.ts). dispose() ends every
 * process and removes the folders.
 */
export class ToolPools implements Disposable {
  private readonly entries = new Map<string, Entry>();
  private disposed = false;

  constructor(private readonly make: (settings: PoolSettings) => ChildPool) {}

  /** The pool under `key`; `settings` is called once, with a maker of the pool's private folder. */
  get(key: string, settings: (folder: () => Promise<string>) => Promise<PoolSettings>): Promise<ChildPool> {
    let entry = this.entries.get(key);
    if (!entry) {
      const made: Entry = { pool: Promise.resolve(undefined as never) };
      const folder = () => (made.folder ??= mkdtemp(join(tmpdir(), shellDirPrefix())));
      made.pool = settings(folder).then((extra) => {
        if (this.disposed) throw new Error("the runtime is shutting down");
        return (made.ready = this.make(extra));
      });
      // A pool that could not be made is made again by the next call (its error reaches that call).
      made.pool.catch(() => this.entries.delete(key));
      this.entries.set(key, made);
      entry = made;
    }
    return entry.pool;
  }

  pids(): number[] {
    return [...this.entries.values()].flatMap((entry) => entry.ready?.pids() ?? []);
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.allSettled(entries.map(async (entry) => (await entry.pool).dispose()));
    await Promise.allSettled(entries.map(async (entry) => entry.folder && rm(await entry.folder, { recursive: true, force: true })));
  }
}

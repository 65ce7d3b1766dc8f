import type { Disposable, ResourceScope } from "../tools/types.js";

/** Holds keyed resources for one owner (a session, the runtime) and disposes them together. */
export class Resources implements ResourceScope {
  private readonly items = new Map<string, Disposable>();
  private disposed = false;

  get<T extends Disposable>(key: string, create: () => T): T {
    if (this.disposed) throw new Error(`resource scope is closed (wanted "${key}")`);
    let item = this.items.get(key) as T | undefined;
    if (!item) {
      item = create();
      this.items.set(key, item);
    }
    return item;
  }

  peek<T extends Disposable>(key: string): T | undefined {
    return this.items.get(key) as T | undefined;
  }

  /** Disposes every resource; one failing does not stop the others. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    const items = [...this.items.values()].reverse();
    this.items.clear();
    await Promise.allSettled(items.map(async (item) => item.dispose()));
  }
}

import type { Disposable } from "../types.js";
import type { McpServerSpec } from "./config.js";
import { McpServerHandle, type ServerHandleDeps } from "./server-handle.js";

/**
 * The runtime's MCP servers by name (one process or session per server, shared by
 * every session). Kept in the runtime's Resources, so shutdown closes them all.
 */
export class McpServerPool implements Disposable {
  private readonly handles = new Map<string, McpServerHandle>();

  constructor(private readonly deps: ServerHandleDeps) {}

  /** Brings the pool in line with the configured servers: new ones added, changed or removed ones closed. */
  sync(specs: readonly McpServerSpec[]): McpServerHandle[] {
    const wanted = new Map(specs.map((spec) => [spec.name, spec]));
    for (const [name, handle] of this.handles) {
      if (wanted.get(name)?.fingerprint !== handle.spec.fingerprint) {
        this.handles.delete(name);
        void handle.dispose();
      }
    }
    for (const spec of specs) if (!this.handles.has(spec.name)) this.handles.set(spec.name, new McpServerHandle(spec, this.deps));
    return specs.map((spec) => this.handles.get(spec.name)!);
  }

  get(name: string): McpServerHandle | undefined {
    return this.handles.get(name);
  }

  list(): McpServerHandle[] {
    return [...this.handles.values()];
  }

  async dispose(): Promise<void> {
    const handles = [...this.handles.values()];
    this.handles.clear();
    await Promise.allSettled(handles.map((handle) => handle.dispose()));
  }
}

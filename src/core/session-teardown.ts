import type { Logger } from "../base/log.js";
import { VeilError } from "../errors.js";
import type { Store } from "../store/store.js";
import type { HookRunner } from "./hooks.js";
import type { LiveSession } from "./live-session.js";

type CloseListener = (sessionId: string) => void | Promise<void>;

/**
 * Ends what a session holds in this process when it closes: its run, what close listeners
 * keep for it (timers, remote methods, sub-agents), its shells. Also for sessions another
 * process closed in the store (`veil sessions close`), found by releaseClosedElsewhere.
 */
export class SessionTeardown {
  private readonly listeners = new Set<CloseListener>();

  constructor(
    private readonly deps: { store: Store; log: Logger; hooks?: HookRunner },
    private readonly live: Map<string, LiveSession>,
  ) {}

  onClose(listener: CloseListener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  async tearDown(id: string, live: LiveSession): Promise<void> {
    live.closing = true;
    if (live.run) {
      live.run.controller.abort(new VeilError("SESSION_CLOSED", "session closed"));
      await live.run.done;
    }
    for (const listener of this.listeners) {
      try {
        await listener(id);
      } catch (error) {
        this.deps.log.warn("close listener failed", { sessionId: id, error: String(error) });
      }
    }
    live.context.abandon(new VeilError("SESSION_CLOSED", `session "${id}" was closed before it could compact`));
    await live.resources.dispose();
    this.live.delete(id);
    this.deps.hooks?.endSession(id);
  }

  /** Sessions held here (with no run) whose row another process closed: torn down here too. */
  async releaseClosedElsewhere(): Promise<string[]> {
    const released: string[] = [];
    for (const [id, live] of [...this.live]) {
      if (live.run || live.closing) continue;
      if ((await this.deps.store.getSession(id))?.status !== "closed" || this.live.get(id) !== live || live.run) continue;
      await this.tearDown(id, live);
      released.push(id);
    }
    return released;
  }
}

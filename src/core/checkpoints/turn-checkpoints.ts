import type { IdGenerator } from "../../base/ids.js";
import type { Logger } from "../../base/log.js";
import type { CheckpointRow, FileContent, Store } from "../../store/store.js";
import { fileContent } from "./chunking.js";
import type { WorkspaceTracker } from "./workspace-tracker.js";

/**
 * The checkpoints of one run's turns. A turn starts when a user message is delivered and
 * ends at the next delivery or at the run's end; what the workspace tracker finds changed
 * then is the turn's checkpoint, written through the run's store (fenced on a cluster).
 */
export class TurnCheckpoints {
  private messageId: string | null = null;
  private off = false;

  constructor(
    private readonly deps: { tracker: WorkspaceTracker; store: Store; sessionId: string; ids: IdGenerator; log: Logger },
  ) {}

  /** The session's agent keeps no checkpoints: this run neither takes a baseline nor settles. */
  disable(): void {
    this.off = true;
  }

  /** Before the run's first tool: the tracker has its baseline. */
  async ready(): Promise<void> {
    if (this.off) return;
    // A workspace that cannot be mirrored (permissions, a full disk) leaves the run without checkpoints, not failed.
    await this.deps.tracker.ready().catch((error: unknown) => this.deps.log.warn("no checkpoint baseline for this workspace", { sessionId: this.deps.sessionId, error: String(error) }));
  }

  /** A delivered message starts a turn (the turn before it settles first). */
  async turnStarted(messageId: string): Promise<void> {
    if (this.off) return;
    if (this.messageId) await this.settle();
    this.messageId = messageId;
  }

  /** The turn's changes become its checkpoint (none when nothing changed). */
  async settle(): Promise<CheckpointRow | null> {
    if (this.off) return null;
    const { tracker, store, sessionId, ids, log } = this.deps;
    const changes = await tracker.settle();
    if (changes.length === 0) return null;
    if (!this.messageId) {
      log.warn("files changed outside any turn of this run; not checkpointed", { sessionId, files: changes.length });
      return null;
    }
    const contents = new Map<string, FileContent>();
    const files = changes.map((c) => {
      const content = c.before ? fileContent(c.before.data) : null;
      if (content) contents.set(content.hash, content);
      return { path: c.path, change: c.change, before_hash: content?.hash ?? null, before_mode: c.before?.mode ?? null };
    });
    return store.addCheckpoint({ id: ids.next("cp"), session_id: sessionId, message_id: this.messageId, kind: "turn", files }, [...contents.values()]);
  }
}

import type { EventBus, EventFilter, VeilEvent } from "../../base/events.js";
import { LIVE_ONLY_EVENTS } from "../../base/events.js";
import type { Logger } from "../../base/log.js";
import type { ClusterStore, LiveDelta } from "../../store/cluster.js";

export interface DeltaRelayDeps {
  store: Pick<ClusterStore, "sendDeltas">;
  nodeId: string;
  log: Logger;
}

/**
 * The bus of a cluster node: the node's own bus, plus the live deltas (chat.chunk,
 * thinking.chunk, tool.chunk) it delivers sent to every other node, whose SSE clients see
 * text stream in whichever node they are connected to. Deltas are never stored, so this is
 * their only way across. The deltas of one tick go out together, batches in order.
 */
export class DeltaRelayBus implements EventBus {
  private pending: LiveDelta[] = [];
  private scheduled = false;
  private sending: Promise<void> = Promise.resolve();

  constructor(
    private readonly inner: EventBus,
    private readonly deps: DeltaRelayDeps,
  ) {}

  deliver(event: VeilEvent): void {
    this.inner.deliver(event);
    if (!LIVE_ONLY_EVENTS.has(event.type)) return;
    const { sessionId, ts, seq: _seq, gseq: _gseq, ...body } = event as VeilEvent & { seq?: number; gseq?: number };
    this.pending.push({ sessionId, ts, body: body as LiveDelta["body"] });
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.send());
  }

  subscribe(filter: EventFilter, handler: (event: VeilEvent) => void): () => void {
    return this.inner.subscribe(filter, handler);
  }

  /** Deltas another node delivered: to this node's subscribers (a node's own come back to it too, and are dropped). */
  deliverRemote(nodeId: string, deltas: readonly LiveDelta[]): void {
    if (nodeId === this.deps.nodeId) return;
    for (const delta of deltas) this.inner.deliver({ ...delta.body, sessionId: delta.sessionId, ts: delta.ts } as VeilEvent);
  }

  /** Resolves once every delta delivered so far was sent. */
  async flush(): Promise<void> {
    if (this.scheduled) this.send();
    await this.sending;
  }

  private send(): void {
    this.scheduled = false;
    const batch = this.pending.splice(0);
    if (batch.length === 0) return;
    // One batch after the other: notifications are delivered in commit order.
    this.sending = this.sending.then(() =>
      this.deps.store.sendDeltas(this.deps.nodeId, batch).catch((error) => this.deps.log.warn("live deltas could not be sent to the other nodes", { error: String(error), deltas: batch.length })),
    );
  }
}

import type { Logger } from "../../base/log.js";
import type { ClusterStore } from "../../store/cluster.js";
import { RemoteMethodService, type PendingMethod, type RemoteMethodServiceDeps, type Waiter } from "../remote-methods.js";

export interface ClusterRemoteMethodDeps extends RemoteMethodServiceDeps {
  store: ClusterStore;
  /** This node: its rows are the ones whose tools wait here. */
  nodeId: string;
  log: Logger;
}

/**
 * Remote methods of several nodes. The waiting tool stays on the node that runs
 * its session; its method is also a row every node lists (GET /remote-methods/pending) and may
 * answer. The database decides the first answer: it marks the row resolved and signals the
 * waiting node, which takes the result. A timeout or abort removes the row, unless a result got
 * there first; then that result wins, so an answer acknowledged with 200 always reaches the tool.
 */
export class ClusterRemoteMethods extends RemoteMethodService {
  private readonly endings = new Map<string, Promise<void>>();

  constructor(private readonly cluster: ClusterRemoteMethodDeps) {
    super(cluster);
  }

  /** The row is stored before UIs hear of the method, so an answer to method.pending finds it. */
  protected override announce(waiter: Waiter): void {
    const { store, nodeId } = this.cluster;
    store
      .addRemoteMethod({ id: waiter.id, sessionId: waiter.sessionId, nodeId, method: waiter.method, data: JSON.stringify(waiter.data ?? null), createdAt: waiter.createdAt })
      .then(
        () => {
          if (this.pending.has(waiter.id)) super.announce(waiter);
          else return store.removeRemoteMethod(waiter.id).then(() => undefined);
        },
        (error: Error) => this.finish(waiter.id, false, error),
      )
      .catch((error) => this.cluster.log.warn("remote method row could not be cleaned up", { id: waiter.id, error: String(error) }));
  }

  protected override end(id: string, timedOut: boolean, error: Error): void {
    if (!this.pending.has(id) || this.endings.has(id)) return;
    const { store, log } = this.cluster;
    const ending = (async () => {
      let stored: { result: string } | undefined;
      try {
        if (!(await store.removeRemoteMethod(id))) stored = await store.takeRemoteResult(id);
      } catch (failure) {
        log.warn("remote method row could not be removed", { id, error: String(failure) });
      }
      if (stored) this.finish(id, false, undefined, JSON.parse(stored.result));
      else this.finish(id, timedOut, error);
    })().finally(() => this.endings.delete(id));
    this.endings.set(id, ending);
  }

  override async resolveResult(id: string, result: unknown): Promise<boolean> {
    const won = await this.cluster.store.resolveRemoteMethod(id, JSON.stringify(result ?? null));
    // Waiting here: take it now rather than after the signal's round trip.
    if (won && this.pending.has(id)) await this.take(id);
    return won;
  }

  override async listPending(): Promise<PendingMethod[]> {
    const rows = await this.cluster.store.listRemoteMethods();
    return rows.map((row) => ({ id: row.id, sessionId: row.sessionId, method: row.method, data: JSON.parse(row.data) as unknown, createdAt: row.createdAt }));
  }

  /** A result was stored for a method whose tool may wait here (the remote-result signal). */
  async take(id: string): Promise<void> {
    if (!this.pending.has(id)) return;
    const stored = await this.cluster.store.takeRemoteResult(id);
    if (stored) this.finish(id, false, undefined, JSON.parse(stored.result));
  }

  /** After a lost listener connection: results stored meanwhile are taken now. */
  async recheck(): Promise<void> {
    await Promise.allSettled([...this.pending.keys()].map((id) => this.take(id)));
  }

  /** A dead node's methods of a session taken over: their tools are gone, so are they (method.done for UIs). */
  async dropDeadNode(sessionId: string, deadNodeId: string): Promise<void> {
    for (const row of await this.cluster.store.listRemoteMethods()) {
      if (row.sessionId !== sessionId || row.nodeId !== deadNodeId) continue;
      if (await this.cluster.store.removeRemoteMethod(row.id)) await this.cluster.events.publish(sessionId, { type: "method.done", id: row.id, timedOut: false });
    }
  }

  override async dispose(): Promise<void> {
    await super.dispose();
    await Promise.allSettled([...this.endings.values()]);
  }
}

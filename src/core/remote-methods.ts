import { randomUUID } from "node:crypto";
import { ToolError, VeilError } from "../errors.js";
import type { RemoteMethods } from "../tools/custom/remote-methods.js";
import type { Disposable } from "../tools/types.js";
import type { Clock } from "../base/clock.js";
import type { EventSink } from "../base/events.js";

/** Manual: "The default timeout is 120 seconds." */
export const DEFAULT_REMOTE_TIMEOUT_MS = 120_000;

/** Key under which the runtime keeps the service (runtime.services and runtime.resources). */
export const REMOTE_METHODS_SERVICE = "remoteMethods";

export interface PendingMethod {
  id: string;
  sessionId: string;
  method: string;
  data: unknown;
  /** ISO time. */
  createdAt: string;
}

export interface RemoteMethodRequest {
  sessionId: string;
  method: string;
  data: unknown;
  /** default: 120 000 */
  timeoutMs?: number;
  /** The tool's signal: its watchdog, cancel and session close abort it. */
  signal?: AbortSignal;
}

export interface Waiter extends PendingMethod {
  resolve(value: unknown): void;
  reject(error: Error): void;
  cleanup(): void;
}

export interface RemoteMethodServiceDeps {
  events: EventSink;
  clock: Clock;
  /** default: crypto.randomUUID */
  newId?: () => string;
}

/**
 * In-memory registry of remote methods (custom tools' `_remoteMethodExecution`).
 * A custom tool's `_remoteMethodExecution` registers a pending method and waits;
 * a UI sees `method.pending` (on GET /remote-methods and GET /events) and answers
 * with POST /remote-methods/:id/result. The first answer wins; every way a method
 * ends (result, timeout, the tool's abort, session close, shutdown) removes it
 * and publishes `method.done`, so nothing dangles whichever fires first.
 */
export class RemoteMethodService implements RemoteMethods, Disposable {
  protected readonly pending = new Map<string, Waiter>();

  constructor(protected readonly deps: RemoteMethodServiceDeps) {}

  execute(request: RemoteMethodRequest): Promise<unknown> {
    const { sessionId, method, data, signal } = request;
    const timeoutMs = typeof request.timeoutMs === "number" && Number.isFinite(request.timeoutMs) && request.timeoutMs > 0 ? request.timeoutMs : DEFAULT_REMOTE_TIMEOUT_MS;
    if (signal?.aborted) return Promise.reject(abortError(method, signal));
    const id = (this.deps.newId ?? randomUUID)();
    const createdAt = new Date(this.deps.clock.now()).toISOString();
    return new Promise<unknown>((resolve, reject) => {
      let cancelTimer = () => {};
      const onAbort = () => this.end(id, false, abortError(method, signal!));
      const waiter: Waiter = {
        id,
        sessionId,
        method,
        data,
        createdAt,
        resolve,
        reject,
        cleanup: () => {
          cancelTimer();
          signal?.removeEventListener("abort", onAbort);
        },
      };
      this.pending.set(id, waiter);
      cancelTimer = this.deps.clock.setTimer(timeoutMs, () =>
        this.end(id, true, new ToolError("TIMEOUT", `remote method "${method}" got no result within ${timeoutMs} ms (no UI answered POST /remote-methods/${id}/result)`)),
      );
      signal?.addEventListener("abort", onAbort, { once: true });
      this.announce(waiter);
    });
  }

  /** Delivers a UI's result. The first call for an id wins; later ones (and unknown ids) return false. */
  resolve(id: string, result: unknown): boolean {
    return this.finish(id, false, undefined, result);
  }

  /** POST /remote-methods/:id/result: as resolve (several nodes: the first answer service-wide wins). */
  async resolveResult(id: string, result: unknown): Promise<boolean> {
    return this.resolve(id, result);
  }

  /** GET /remote-methods(/pending): the waiting methods, oldest first (several nodes: the whole service's). */
  async listPending(): Promise<PendingMethod[]> {
    return this.list();
  }

  /** Ends every method of a session (session closed or cancelled); the waiting tools reject. */
  cancelSession(sessionId: string, reason = "session closed"): number {
    let count = 0;
    for (const waiter of [...this.pending.values()]) {
      if (waiter.sessionId !== sessionId) continue;
      if (this.pending.has(waiter.id)) {
        this.end(waiter.id, false, new ToolError("CANCELLED", `remote method "${waiter.method}" ended: ${reason}`));
        count++;
      }
    }
    return count;
  }

  /** Ids of the methods waiting now, oldest first. */
  pendingIds(): string[] {
    return [...this.pending.keys()];
  }

  /** The waiting methods, oldest first (replayed to a UI that connects). */
  list(): PendingMethod[] {
    return [...this.pending.values()].map(({ id, sessionId, method, data, createdAt }) => ({ id, sessionId, method, data, createdAt }));
  }

  dispose(): void | Promise<void> {
    for (const waiter of [...this.pending.values()]) {
      this.end(waiter.id, false, new ToolError("CANCELLED", `remote method "${waiter.method}" ended: server shutting down`));
    }
  }

  /** The method is waiting: UIs learn of it. */
  protected announce(waiter: Waiter): void {
    void this.deps.events.publish(waiter.sessionId, { type: "method.pending", id: waiter.id, method: waiter.method, data: waiter.data, createdAt: waiter.createdAt });
  }

  /** The method ends without a result (timeout, abort, session close, shutdown). */
  protected end(id: string, timedOut: boolean, error: Error): void {
    this.finish(id, timedOut, error);
  }

  /** Removes the method (atomically: the map is the lock), publishes method.done, settles the waiter. */
  protected finish(id: string, timedOut: boolean, error?: Error, result?: unknown): boolean {
    const waiter = this.pending.get(id);
    if (!waiter) return false;
    this.pending.delete(id);
    waiter.cleanup();
    void this.deps.events.publish(waiter.sessionId, { type: "method.done", id, timedOut });
    if (error) waiter.reject(error);
    else waiter.resolve(result);
    return true;
  }
}

function abortError(method: string, signal: AbortSignal): Error {
  const reason = signal.reason;
  const why = reason instanceof Error ? reason.message : reason !== undefined ? String(reason) : "aborted";
  const code = reason instanceof VeilError && reason.code === "SESSION_CLOSED" ? "SESSION_CLOSED" : "CANCELLED";
  return new ToolError(code, `remote method "${method}" was abandoned before a result arrived: ${why}`);
}

export function isRemoteMethodService(value: unknown): value is RemoteMethodService {
  return value instanceof RemoteMethodService;
}

import type { Clock } from "../../base/clock.js";
import type { EventBus, VeilEvent } from "../../base/events.js";
import type { Logger } from "../../base/log.js";
import type { OutboundWebhook, WebhookEvent } from "../../config/types.js";
import type { NewWebhookDelivery, Store, WebhookAttemptOutcome, WebhookDeliveryRow, WebhookDeliveryStatus } from "../../store/store.js";
import type { Disposable } from "../../tools/types.js";
import { VERSION } from "../../version.js";
import { DELIVERY_HEADER, SIGNATURE_HEADER, signBody } from "./signature.js";

export interface OutboundWebhookDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  bus: EventBus;
  /** settings.webhooks.out */
  hooks: readonly OutboundWebhook[];
  /** Where each hook's secretEnv is looked up. */
  env: Readonly<Record<string, string | undefined>>;
  /** default: the global fetch */
  fetch?: typeof fetch;
  /** One attempt's wait for an answer, ms. default: 10000 */
  requestTimeoutMs?: number;
  /** How often the store is looked at for due deliveries (another node's, a restart's), ms. default: 5000 */
  pollMs?: number;
}

/** Tries per delivery, the first included. */
export const MAX_ATTEMPTS = 8;
/** Wait before the second try, ms; each further wait is four times the last, up to an hour. */
const FIRST_RETRY_MS = 2000;
const MAX_RETRY_MS = 3_600_000;
const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_POLL_MS = 5000;
/** Deliveries taken per look at the store. */
const BATCH = 50;
/** Settled deliveries and inbound receipts are kept this long. */
const KEEP_MS = 7 * 24 * 3600 * 1000;
const PRUNE_EVERY_MS = 3600 * 1000;
/** Stop reasons that mean a budget ended the run. */
const BUDGET_STOPS = new Set(["max_iterations", "max_wall_seconds", "max_tokens", "budget"]);

/** The wait after `attempts` failed tries: 2 s, 8 s, 32 s, 128 s, … (tries at 0, 2, 10, 42, 170 s, …). */
export function retryDelayMs(attempts: number): number {
  return Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 4 ** Math.max(0, attempts - 1));
}

/** The public shape of a delivery (GET /webhooks/deliveries). */
export interface WebhookDeliveryInfo {
  deliveryId: string;
  url: string;
  type: string;
  sessionId: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  /** ISO time of the next try while pending, else null. */
  nextAttemptAt: string | null;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

/**
 * Outbound webhooks: each stored event a hook subscribes to becomes a delivery row (its
 * body fixed once, signed with HMAC-SHA256 at each try), POSTed until a 2xx answer, with
 * retries at growing intervals. The rows survive restarts; on several nodes every node
 * queues the same ids (the first insert wins) and each try is claimed by one node.
 */
export class OutboundWebhooks implements Disposable {
  private unsubscribe: (() => void) | null = null;
  private timer: (() => void) | null = null;
  private pumping: Promise<void> | null = null;
  private arming: Promise<void> | null = null;
  private again = false;
  private disposed = false;
  private pruneTimer: (() => void) | null = null;
  /** Queuing and tries in flight. */
  private readonly work = new Set<Promise<void>>();

  constructor(private readonly deps: OutboundWebhookDeps) {}

  /** Serving runtime: listens for events and sends what is due (deliveries left by the last run first). */
  start(): void {
    if (this.disposed || this.pruneTimer) return;
    this.prune();
    // No hook: nothing is sent, and deliveries queued under earlier settings wait.
    if (this.deps.hooks.length === 0) return;
    this.unsubscribe = this.deps.bus.subscribe({ types: ["chat.done", "method.pending"] }, (event) => this.track(this.enqueue(event)));
    this.kick();
  }

  async list(filter: { status?: WebhookDeliveryStatus; limit?: number } = {}): Promise<WebhookDeliveryInfo[]> {
    const rows = await this.deps.store.listWebhookDeliveries({ status: filter.status, limit: filter.limit ?? 100 });
    return rows.map(toInfo);
  }

  /** Settles when nothing is being sent and the timer for the next try is set. */
  async idle(): Promise<void> {
    while (this.pumping || this.arming || this.work.size > 0) await Promise.allSettled([this.pumping, this.arming, ...this.work]);
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.unsubscribe?.();
    this.timer?.();
    this.pruneTimer?.();
    await this.idle();
  }

  /** The deliveries one stored event makes, one per hook that subscribes to its type. */
  deliveriesOf(event: VeilEvent): NewWebhookDelivery[] {
    if (event.gseq === undefined) return [];
    const types: WebhookEvent[] = [];
    if (event.type === "chat.done") {
      types.push("chat.done");
      if (BUDGET_STOPS.has(event.stopReason)) types.push("session.budget");
    } else if (event.type === "method.pending") types.push("method.pending");
    const createdAt = new Date(this.deps.clock.now()).toISOString();
    const out: NewWebhookDelivery[] = [];
    this.deps.hooks.forEach((hook, index) => {
      for (const type of types) {
        if (!hook.events.includes(type)) continue;
        // Derived from the event's store-wide number: every node queues the same id for it.
        const id = `whd_${event.gseq}_${index}${type === "session.budget" ? "_budget" : ""}`;
        const body = JSON.stringify({ deliveryId: id, type, sessionId: event.sessionId, data: dataOf(type, event) });
        out.push({ id, url: hook.url, secret_env: hook.secretEnv, type, session_id: event.sessionId, body, next_attempt_at: this.deps.clock.now(), created_at: createdAt });
      }
    });
    return out;
  }

  private async enqueue(event: VeilEvent): Promise<void> {
    const rows = this.deliveriesOf(event);
    if (rows.length === 0 || this.disposed) return;
    try {
      await this.deps.store.addWebhookDeliveries(rows);
    } catch (error) {
      this.deps.log.warn("could not queue webhook deliveries", { sessionId: event.sessionId, type: event.type, error: String(error) });
      return;
    }
    this.kick();
  }

  /** Sends what is due now; runs one pump at a time (a kick meanwhile runs another after it). */
  private kick(): void {
    if (this.disposed) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = this.pump()
      .catch((error) => this.deps.log.warn("webhook deliveries could not be sent", { error: String(error) }))
      .finally(() => {
        this.pumping = null;
        if (this.again) {
          this.again = false;
          this.kick();
        } else this.rearm();
      });
  }

  private async pump(): Promise<void> {
    const { store, clock } = this.deps;
    for (;;) {
      const due = await store.dueWebhookDeliveries(clock.now(), BATCH);
      // Claimed before the next read, which then finds the rest.
      const claimed = await Promise.all(due.map((row) => this.claim(row)));
      for (const row of claimed) if (row) this.track(this.attempt(row));
      if (due.length < BATCH || this.disposed) break;
    }
  }

  /** Inbound receipts and settled deliveries older than a week go, now and every hour. */
  private prune(): void {
    const { store, clock, log } = this.deps;
    this.track(store.pruneWebhooks(new Date(clock.now() - KEEP_MS).toISOString()).catch((error) => log.warn("could not prune old webhook rows", { error: String(error) })));
    if (!this.disposed) this.pruneTimer = clock.setTimer(PRUNE_EVERY_MS, () => this.prune());
  }

  private track(work: Promise<void>): void {
    this.work.add(work);
    void work.finally(() => this.work.delete(work));
  }

  /** Sets the timer for the next due try (at most a poll interval away). */
  private rearm(): void {
    const arming = this.armTimer().finally(() => {
      if (this.arming === arming) this.arming = null;
    });
    this.arming = arming;
  }

  private async armTimer(): Promise<void> {
    this.timer?.();
    if (this.disposed) return;
    const pollMs = this.deps.pollMs ?? DEFAULT_POLL_MS;
    let wait = pollMs;
    try {
      const next = await this.deps.store.nextWebhookDeliveryAt();
      if (next !== null) wait = Math.min(pollMs, Math.max(0, next - this.deps.clock.now()));
    } catch (error) {
      this.deps.log.warn("could not read the next webhook delivery time", { error: String(error) });
    }
    if (this.disposed) return;
    this.timer?.();
    this.timer = this.deps.clock.setTimer(wait, () => this.kick());
  }

  /** Takes the next try of `row` for this node (counted at once), or undefined when another node did. */
  private claim(row: WebhookDeliveryRow): Promise<WebhookDeliveryRow | undefined> {
    const { store, clock } = this.deps;
    // Held past the request's timeout: a node that dies mid-try leaves it to the others after that.
    return store.claimWebhookAttempt(row.id, row.next_attempt_at, clock.now() + this.timeoutMs * 2 + 5000, new Date(clock.now()).toISOString());
  }

  private get timeoutMs(): number {
    return this.deps.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** One try of a claimed delivery, and what it left: delivered, failed for good, or pending again. */
  private async attempt(row: WebhookDeliveryRow): Promise<void> {
    const { store, clock, log } = this.deps;
    // Settings decide where requests go: a URL taken out of them since the row was queued gets none.
    const configured = this.deps.hooks.some((hook) => hook.url === row.url);
    const outcome: TryOutcome = configured ? await this.post(row, this.timeoutMs) : { status: null, error: "the URL is no longer in settings.webhooks.out" };
    const now = clock.now();
    const settled: WebhookAttemptOutcome =
      outcome.error === null
        ? { status: "delivered", next_attempt_at: now, last_status: outcome.status, last_error: null, at: new Date(now).toISOString() }
        : { status: !configured || row.attempts >= MAX_ATTEMPTS ? "failed" : "pending", next_attempt_at: now + retryDelayMs(row.attempts), last_status: outcome.status, last_error: outcome.error, at: new Date(now).toISOString() };
    if (settled.status === "failed") log.warn("a webhook delivery failed for good", { deliveryId: row.id, url: row.url, attempts: row.attempts, error: outcome.error });
    try {
      await store.settleWebhookAttempt(row.id, settled);
    } catch (error) {
      log.warn("could not record a webhook attempt", { deliveryId: row.id, error: String(error) });
    }
    if (settled.status === "pending" && !this.disposed) this.rearm();
  }

  private async post(row: WebhookDeliveryRow, timeoutMs: number): Promise<TryOutcome> {
    const secret = this.deps.env[row.secret_env];
    if (!secret) return { status: null, error: `CONFIG_ERROR: secretEnv ${row.secret_env} is not set` };
    const controller = new AbortController();
    const cancelTimer = this.deps.clock.setTimer(timeoutMs, () => controller.abort(new Error(`no answer within ${timeoutMs} ms`)));
    try {
      const response = await (this.deps.fetch ?? fetch)(row.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": `veil/${VERSION}`,
          [SIGNATURE_HEADER]: signBody(secret, row.body),
          [DELIVERY_HEADER]: row.id,
          "x-veil-event": row.type,
        },
        body: row.body,
        redirect: "manual",
        signal: controller.signal,
      });
      await response.body?.cancel().catch(() => undefined);
      if (response.status >= 200 && response.status < 300) return { status: response.status, error: null };
      return { status: response.status, error: `HTTP ${response.status}` };
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const reason = controller.signal.aborted ? String((controller.signal.reason as Error)?.message ?? "timed out") : (cause?.code ?? cause?.message ?? (error as Error).message);
      return { status: null, error: reason };
    } finally {
      cancelTimer();
    }
  }
}

/** An HTTP status (null when none came) and what went wrong (null: delivered). */
type TryOutcome = { status: number; error: null } | { status: number | null; error: string };

function dataOf(type: WebhookEvent, event: VeilEvent): Record<string, unknown> {
  const { type: _type, sessionId: _session, ...rest } = event as VeilEvent & Record<string, unknown>;
  if (type !== "session.budget" || event.type !== "chat.done") return rest;
  return { stopReason: event.stopReason, tokenUsage: event.tokenUsage, cost_usd: event.cost_usd, messageId: event.messageId };
}

function toInfo(row: WebhookDeliveryRow): WebhookDeliveryInfo {
  return {
    deliveryId: row.id,
    url: row.url,
    type: row.type,
    sessionId: row.session_id,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.status === "pending" ? new Date(row.next_attempt_at).toISOString() : null,
    lastStatus: row.last_status,
    lastError: row.last_error,
    createdAt: row.created_at,
    deliveredAt: row.delivered_at,
  };
}

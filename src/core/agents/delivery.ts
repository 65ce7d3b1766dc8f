import { VeilError, errorMessage, isVeilError } from "../../errors.js";
import type { MessageRow, SessionRow, Store } from "../../store/store.js";
import type { Logger } from "../../tools/types.js";
import type { Clock } from "../../base/clock.js";
import type { IdGenerator } from "../../base/ids.js";
import type { RunResult } from "../../engines/types.js";
import type { RunWrites } from "../recorder.js";
import type { SessionManager } from "../session-manager.js";
import { attachRecoveredSeed, knowsCorrelation, newWaiter, type AgentReply, type Chain, type Waiter } from "./delivery-chain.js";
import { drainedWaiter, seedsInInboxes } from "./delivery-recovery.js";
import { COINCIDED_TEXT, finalText } from "./messages.js";
import { auditWaiter, deliverReply, stepsLog } from "./reply-handoff.js";
import { waitForReply } from "./sync-wait.js";

export type { AgentReply } from "./delivery-chain.js";

export interface SendInput {
  callerId: string;
  target: Pick<SessionRow, "id" | "agent" | "instance_name">;
  /** Already wrapped with the sender's prefix. */
  content: string;
  fullSteps: boolean;
  meta: Record<string, unknown>;
}

export interface SyncReply {
  messageId: string;
  text: string;
  finishReason: string;
  /** "own": the reply to this message; "merged": an earlier async message of the same caller landed first. */
  source: "own" | "merged";
}

export interface DeliveryDeps {
  sessions: SessionManager;
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  log: Logger;
  /** Several nodes: true for the result of a run on another node, whose delivery answers the message (adoptForeignMessages). */
  ranElsewhere?: (result: RunResult) => boolean;
}

/**
 * Asymmetric delivery of agent messages over the SessionManager:
 * msg#1 of a chain gets the final text of the run that consumes it; msg#2+ get the
 * first text produced after their drain (with a still-running reminder), or nothing
 * when that text is the final reply msg#1 receives (the coincide rule). Replies reach
 * the caller as a new user message via `sessions.send`. One instance per runtime.
 */
export class AgentDelivery {
  private readonly chains = new Map<string, Chain>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly idleWaiters: (() => void)[] = [];
  private disposed = false;

  constructor(private readonly deps: DeliveryDeps) {}

  /**
   * Queues an async message. The msg#1/msg#2+ role is claimed synchronously, before
   * any await, so concurrent first calls resolve to exactly one seed.
   */
  async sendAsync(input: SendInput): Promise<{ role: "seed" | "follower"; messageId: string }> {
    const chain = this.chainFor(input.target);
    const waiter = newWaiter({ correlationId: this.deps.ids.next("corr"), callerId: input.callerId, role: chain.seed ? "follower" : "seed", fullSteps: input.fullSteps });
    if (waiter.role === "seed") chain.seed = waiter;
    else chain.followers.set(waiter.correlationId, waiter);
    let receipt;
    try {
      receipt = await this.deps.sessions.send(input.target.id, input.content, {
        // replyTo/fullSteps let a restarted runtime re-attach a seed still in the inbox (recover()).
        meta: {
          ...input.meta,
          async_inform: true,
          dispatch_role: waiter.role === "seed" ? "msg#1" : "msg#2+",
          agentCorrelation: waiter.correlationId,
          replyTo: input.callerId,
          fullSteps: input.fullSteps,
        },
      });
    } catch (error) {
      this.forget(chain, waiter);
      throw error;
    }
    waiter.messageId = receipt.messageId;
    void receipt.result.then((result) => {
      if (!this.deps.ranElsewhere?.(result)) return this.runEnded(chain, waiter, result);
      // The node that ran it adopted the message from its meta and answers it.
      waiter.settled = true;
      this.forget(chain, waiter);
    });
    return { role: waiter.role, messageId: receipt.messageId };
  }

  /**
   * Sends a sync message and waits for its reply. This caller's async messages to the
   * same target still in flight are merged in: whichever reply lands first answers.
   * Never cancels the target; on timeout the caller gets TIMEOUT and the target runs on.
   */
  async sendSync(input: SendInput & { timeoutMs: number; signal: AbortSignal }): Promise<SyncReply> {
    const chain = this.chains.get(input.target.id);
    const merged = chain ? [chain.seed, ...chain.followers.values()].filter((w): w is Waiter => !!w && !w.settled && !w.taker && w.callerId === input.callerId) : [];
    let messageId = "";
    const take = (reply: AgentReply) => wait.end({ messageId, text: reply.text, finishReason: reply.finishReason, source: "merged" });
    for (const w of merged) w.taker = take;
    const wait = waitForReply<SyncReply>(this.deps.clock, input.target.id, input.timeoutMs, input.signal, () => {
      for (const w of merged) if (w.taker === take) w.taker = null;
    });
    const end = wait.end;

    try {
      const receipt = await this.deps.sessions.send(input.target.id, input.content, { meta: { ...input.meta, async_inform: false } });
      messageId = receipt.messageId;
      void receipt.result.then(async (result) => {
        if (wait.isOver()) return;
        // This caller's msg#1 consumed by the same run carries the same final text: let it answer
        // (its taker fires in a moment) so the caller does not get the reply twice.
        if (merged.some((w) => w.role === "seed" && w.taker === take && w.drainedRow)) return;
        try {
          const text = input.fullSteps ? await this.stepsLog(input.target.id, receipt.messageId, result) : finalText(result);
          end({ messageId, text, finishReason: result.finishReason, source: "own" });
        } catch (error) {
          end(isVeilError(error) ? error : new VeilError("INTERNAL_ERROR", errorMessage(error)));
        }
      });
    } catch (error) {
      end(isVeilError(error) ? error : new VeilError("INTERNAL_ERROR", errorMessage(error)));
    }
    const value = await wait.outcome;
    if (value instanceof VeilError) throw value;
    return value;
  }

  /**
   * Resolves when no chain is in flight and every reply has been handed to the caller's
   * session (stored in its inbox or history). For tests, benchmarks and graceful shutdown.
   */
  settled(): Promise<void> {
    if (this.isSettled()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * After a restart (call before `sessions.recover()`): re-attaches every msg#1 still
   * waiting in a target's durable inbox, so the run that consumes it answers its caller
   * exactly once. msg#2+ items are not re-attached (their mid-run replies are best-effort).
   * Returns the number of seeds re-attached.
   */
  async recover(): Promise<number> {
    let count = 0;
    for (const { target, waiter } of await seedsInInboxes(this.deps.store)) {
      const chain = this.chainFor(target);
      if (chain.recovered.has(waiter.correlationId)) continue;
      attachRecoveredSeed(chain, waiter);
      count++;
    }
    return count;
  }

  /**
   * Several nodes: an async message is answered by the node whose run drains it, whichever
   * node sent it. From this call on, every drained async message this node does not know
   * becomes a waiter here from its meta (as recover() does after a restart), so replies reach
   * their caller even when the sender's node died meanwhile. Returns the unsubscribe.
   */
  adoptForeignMessages(): () => void {
    return this.deps.sessions.observeEvery({ onDrained: (rows) => this.adopt(rows) });
  }

  private adopt(rows: MessageRow[]): void {
    for (const row of rows) {
      const waiter = drainedWaiter(row);
      if (!waiter) continue;
      const known = this.chains.get(row.session_id);
      if (known && knowsCorrelation(known, waiter.correlationId)) continue;
      // The target's name and instance are read when a reply is delivered (deliverReply()).
      const chain = known ?? this.chainFor({ id: row.session_id, agent: "", instance_name: null });
      if (waiter.role === "follower") chain.followers.set(waiter.correlationId, waiter);
      else attachRecoveredSeed(chain, waiter);
    }
  }

  /** Chains in flight (diagnostics). */
  activeChains(): number {
    return this.chains.size;
  }

  /** Lets replies already being handed over finish (a shutdown's cancelled runs still answer), then stops. */
  async dispose(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    this.disposed = true;
    for (const chain of this.chains.values()) chain.unobserve();
    this.chains.clear();
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private chainFor(target: Chain["target"]): Chain {
    const existing = this.chains.get(target.id);
    if (existing) return existing;
    const chain: Chain = { target, seed: null, followers: new Map(), recovered: new Map(), unobserve: () => undefined };
    chain.unobserve = this.deps.sessions.observe(target.id, {
      onDrained: (rows) => this.drained(chain, rows),
      onAssistant: (row, info) => this.assistant(chain, row, info),
      onRunEnd: (result, writes) => this.runEnd(chain, result, writes),
    });
    this.chains.set(target.id, chain);
    return chain;
  }

  private drained(chain: Chain, rows: MessageRow[]): void {
    for (const row of rows) {
      const id = row.meta?.agentCorrelation;
      if (typeof id !== "string") continue;
      if (chain.seed?.correlationId === id) chain.seed.drainedRow = row;
      const recovered = chain.recovered.get(id);
      if (recovered) recovered.drainedRow = row;
      const follower = chain.followers.get(id);
      if (follower) follower.drainedRow = row;
    }
  }

  /** msg#2+: the first text after the drain answers; the run's final text is msg#1's (coincide rule). */
  private assistant(chain: Chain, row: MessageRow, info: { final: boolean; hasText: boolean; writes: RunWrites }): void {
    const seedInRun = Boolean(chain.seed?.drainedRow);
    for (const waiter of this.armed(chain)) {
      if (info.final && seedInRun) this.coincide(chain, waiter, info.writes);
      else if (info.hasText) this.settle(chain, waiter, { text: row.content ?? "", finishReason: row.finish_reason ?? "stop", role: "follower", midRun: !info.final });
    }
  }

  /** The run ended before producing text for a drained msg#2+; a re-attached msg#1 it consumed gets its final text. */
  private runEnd(chain: Chain, result: RunResult, writes: RunWrites): void {
    const seedInRun = Boolean(chain.seed?.drainedRow);
    for (const waiter of this.armed(chain)) {
      if (seedInRun) this.coincide(chain, waiter, writes);
      else this.settle(chain, waiter, { text: finalText(result), finishReason: result.finishReason, role: "follower", midRun: false });
    }
    for (const waiter of chain.recovered.values()) {
      if (waiter.settled) continue;
      if (waiter.drainedRow) {
        this.runEnded(chain, waiter, result);
        continue;
      }
      // A failed run drains its inbox without the drain hook: the stored row tells whether it took this seed.
      const id = waiter.messageId;
      if (result.stopReason !== "error" || !id) continue;
      this.track(
        (async () => {
          if (!waiter.settled && (await this.deps.store.getMessage(id))) this.runEnded(chain, waiter, result);
        })(),
      );
    }
  }

  /** The run that consumed this message ended (for followers only a fallback: the hooks answer first). */
  private runEnded(chain: Chain, waiter: Waiter, result: RunResult): void {
    if (waiter.settled) return;
    if (waiter.role === "follower") {
      this.settle(chain, waiter, { text: finalText(result), finishReason: result.finishReason, role: "follower", midRun: false });
      return;
    }
    waiter.settled = true;
    chain.recovered.delete(waiter.correlationId);
    if (chain.seed === waiter) chain.seed = [...chain.recovered.values()][0] ?? null;
    const work = (async () => {
      const text = waiter.fullSteps && waiter.messageId ? await this.stepsLog(chain.target.id, waiter.messageId, result) : finalText(result);
      this.answer(chain, waiter, { text, finishReason: result.finishReason, role: "seed", midRun: false });
    })();
    this.track(work);
    this.maybeDrop(chain);
  }

  private armed(chain: Chain): Waiter[] {
    return [...chain.followers.values()].filter((w) => w.drainedRow && !w.settled);
  }

  private settle(chain: Chain, waiter: Waiter, reply: AgentReply): void {
    waiter.settled = true;
    this.forget(chain, waiter);
    this.answer(chain, waiter, reply);
  }

  /** Hands the reply to a merged sync call, or delivers it to the caller's session. */
  private answer(chain: Chain, waiter: Waiter, reply: AgentReply): void {
    if (waiter.taker) {
      const take = waiter.taker;
      waiter.taker = null;
      take(reply);
      this.track(this.audit(chain, waiter, "agent.reply_to_sync", { role: reply.role }));
      return;
    }
    this.track(this.deliver(chain, waiter, reply));
  }

  /** The drained message's mark is the target run's write (through its writer); the audit row is the delivery's own. */
  private coincide(chain: Chain, waiter: Waiter, writes: RunWrites): void {
    waiter.settled = true;
    waiter.taker = null;
    this.forget(chain, waiter);
    const row = waiter.drainedRow;
    const work = (async () => {
      if (row) await writes.setMessageMeta(row.id, { ...(row.meta ?? {}), audit: COINCIDED_TEXT, coincided: true });
      await this.audit(chain, waiter, "agent.coincided", { text: COINCIDED_TEXT, messageId: row?.id ?? waiter.messageId });
    })();
    this.track(work);
  }

  private async deliver(chain: Chain, waiter: Waiter, reply: AgentReply): Promise<void> {
    if (this.disposed) return;
    await deliverReply(this.deps, chain, waiter, reply);
  }

  private audit(chain: Chain, waiter: Waiter, kind: string, data: Record<string, unknown>): Promise<void> {
    return auditWaiter(this.deps.store, chain, waiter, kind, data);
  }

  private stepsLog(targetId: string, messageId: string, result: RunResult): Promise<string> {
    return stepsLog(this.deps.store, targetId, messageId, result);
  }

  private forget(chain: Chain, waiter: Waiter): void {
    if (chain.recovered.get(waiter.correlationId) === waiter) chain.recovered.delete(waiter.correlationId);
    if (chain.seed === waiter) chain.seed = [...chain.recovered.values()][0] ?? null;
    chain.followers.delete(waiter.correlationId);
    this.maybeDrop(chain);
  }

  private maybeDrop(chain: Chain): void {
    if (chain.seed || chain.followers.size > 0) return;
    if (this.chains.get(chain.target.id) === chain) this.chains.delete(chain.target.id);
    chain.unobserve();
    this.checkSettled();
  }

  private isSettled(): boolean {
    return this.chains.size === 0 && this.inFlight.size === 0;
  }

  private checkSettled(): void {
    if (this.isSettled()) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private track(work: Promise<void>): void {
    const guarded = work.catch((error: unknown) => this.deps.log.warn("agent delivery bookkeeping failed", { error: errorMessage(error) }));
    this.inFlight.add(guarded);
    void guarded.finally(() => {
      this.inFlight.delete(guarded);
      this.checkSettled();
    });
  }
}

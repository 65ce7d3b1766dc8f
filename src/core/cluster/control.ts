import { randomUUID } from "node:crypto";
import type { Logger } from "../../base/log.js";
import { VeilError, type ErrorCode } from "../../errors.js";
import type { ClusterStore, ControlAction, LeaseInfo } from "../../store/cluster.js";

/** How often a waiting requester re-checks the owner's lease and repeats its request (signals may be lost). */
const ASK_AGAIN_MS = 1000;
/** How long an owner remembers an answer, so a repeated request gets it again instead of acting twice. */
const ANSWER_KEPT_MS = 60_000;
/** NOTIFY payloads end at 8000 bytes; an answer past this is sent in a shorter form. */
const MAX_ANSWER_CHARS = 6000;

/** What the owner's action gave, in a form that crosses nodes as JSON. */
export type ControlAnswer =
  | { value: unknown }
  | { error: { code: ErrorCode; message: string; details?: Record<string, unknown> } }
  /** Not a VeilError: the requester answers with the same 500 the owner's route would. */
  | { internal: string }
  /** A value too large for a signal (a session row with a long objective): the requester reads the row itself. */
  | { reread: true };

export function encodeAnswer(outcome: PromiseSettledResult<unknown>): ControlAnswer {
  if (outcome.status === "fulfilled") {
    const answer = { value: outcome.value ?? null };
    return JSON.stringify(answer).length <= MAX_ANSWER_CHARS ? answer : { reread: true };
  }
  const error = outcome.reason;
  if (error instanceof VeilError) {
    const message = error.message.slice(0, MAX_ANSWER_CHARS / 2);
    const details = error.details && JSON.stringify(error.details).length <= MAX_ANSWER_CHARS / 3 ? { details: error.details } : {};
    return { error: { code: error.code, message, ...details } };
  }
  return { internal: (error instanceof Error ? error.message : String(error)).slice(0, MAX_ANSWER_CHARS / 2) };
}

/** The owner's value, or its error thrown again here; `reread` reads the session row (the owner's write is committed). */
export async function decodeAnswer(answer: ControlAnswer, reread: () => Promise<unknown>): Promise<unknown> {
  if ("reread" in answer) return reread();
  if ("value" in answer) return answer.value;
  if ("error" in answer) throw new VeilError(answer.error.code, answer.error.message, { details: answer.error.details });
  throw new Error(answer.internal);
}

export interface ControlRelayDeps {
  store: ClusterStore;
  nodeId: string;
  log: Logger;
  /** Runs the action on this node (it owns the session). */
  act(sessionId: string, action: ControlAction): Promise<unknown>;
}

interface Asked {
  resolve(answer: ControlAnswer): void;
}

interface Given {
  answer: ControlAnswer | null;
}

/**
 * Requests to a session's owner over the `control` signal, and their answers back on the same
 * channel: a request carries `{ requestId, from, to }`, an answer `{ requestId, answer }`.
 * Signals are hints that a dropped listener loses, so the requester repeats its request until
 * the answer comes or the lease moves; the owner acts once per request id and repeats the answer.
 */
export class ControlRelay {
  private readonly asked = new Map<string, Asked>();
  private readonly given = new Map<string, Given>();

  constructor(private readonly deps: ControlRelayDeps) {}

  /**
   * Asks `lease`'s holder to act. Resolves with its answer, or "moved" once that lease is no
   * longer live with that holder (it died or gave the session up): the caller decides again.
   */
  async ask(sessionId: string, action: ControlAction, lease: LeaseInfo, closed: () => boolean): Promise<ControlAnswer | "moved"> {
    const { store, nodeId } = this.deps;
    const requestId = randomUUID();
    const answered = new Promise<ControlAnswer>((resolve) => this.asked.set(requestId, { resolve }));
    const request = { requestId, from: nodeId, to: lease.nodeId };
    try {
      for (;;) {
        await store.sendControl(sessionId, action, request);
        let timer: NodeJS.Timeout | undefined;
        const waited = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ASK_AGAIN_MS)));
        const answer = await Promise.race([answered, waited]);
        clearTimeout(timer);
        if (answer) return answer;
        if (closed()) return "moved";
        const now = await store.getLease(sessionId);
        if (!now?.live || now.nodeId !== lease.nodeId || now.generation !== lease.generation) return "moved";
      }
    } finally {
      this.asked.delete(requestId);
    }
  }

  /** A control signal: an answer for a request of this node, or a request to this node. */
  onSignal(sessionId: string, action: ControlAction, data: Record<string, unknown> | undefined): void {
    const requestId = data?.requestId;
    if (typeof requestId !== "string") return;
    if (data!.answer !== undefined) {
      this.asked.get(requestId)?.resolve(data!.answer as ControlAnswer);
      return;
    }
    if (data!.to !== this.deps.nodeId) return;
    const known = this.given.get(requestId);
    if (known) {
      // A repeat: answer again if done; a request still being handled answers when it ends.
      if (known.answer) this.reply(sessionId, action, requestId, known.answer);
      return;
    }
    const given: Given = { answer: null };
    this.given.set(requestId, given);
    setTimeout(() => this.given.delete(requestId), ANSWER_KEPT_MS).unref();
    void Promise.allSettled([this.deps.act(sessionId, action)]).then(([outcome]) => {
      given.answer = encodeAnswer(outcome!);
      this.reply(sessionId, action, requestId, given.answer);
    });
  }

  private reply(sessionId: string, action: ControlAction, requestId: string, answer: ControlAnswer): void {
    this.deps.store
      .sendControl(sessionId, action, { requestId, answer })
      .catch((error) => this.deps.log.warn("could not answer a control request", { sessionId, action, error: String(error) }));
  }
}

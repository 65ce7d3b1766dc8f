import { randomUUID } from "node:crypto";
import type { Logger } from "../../base/log.js";
import { VeilError, type ErrorCode } from "../../errors.js";
import type { ClusterStore, ControlAction, ControlArgs, LeaseInfo } from "../../store/cluster.js";

/** How often a waiting requester re-checks the owner's lease and repeats its request (signals may be lost). */
const ASK_AGAIN_MS = 1000;
/** How long an owner remembers an answer, so a repeated request gets it again instead of acting twice. */
const ANSWER_KEPT_MS = 60_000;
/** NOTIFY payloads end at 8000 bytes; an answer past this crosses in pieces, an error message is cut to half of it. */
const MAX_ANSWER_BYTES = 6000;
/** Base64 characters per piece of a long answer (one byte each, nothing to escape in JSON). */
const PIECE_CHARS = 6000;

/** What the owner's action gave, in a form that crosses nodes as JSON. */
export type ControlAnswer =
  | { value: unknown }
  | { error: { code: ErrorCode; message: string; details?: Record<string, unknown> } }
  /** Not a VeilError: the requester answers with the same 500 the owner's route would. */
  | { internal: string };

export function encodeAnswer(outcome: PromiseSettledResult<unknown>): ControlAnswer {
  if (outcome.status === "fulfilled") return { value: outcome.value ?? null };
  const error = outcome.reason;
  if (error instanceof VeilError) {
    const message = error.message.slice(0, MAX_ANSWER_BYTES / 2);
    const details = error.details && JSON.stringify(error.details).length <= MAX_ANSWER_BYTES / 3 ? { details: error.details } : {};
    return { error: { code: error.code, message, ...details } };
  }
  return { internal: (error instanceof Error ? error.message : String(error)).slice(0, MAX_ANSWER_BYTES / 2) };
}

/** The owner's value, or its error thrown again here. */
export function decodeAnswer(answer: ControlAnswer): unknown {
  if ("value" in answer) return answer.value;
  if ("error" in answer) throw new VeilError(answer.error.code, answer.error.message, { details: answer.error.details });
  throw new Error(answer.internal);
}

/** One piece of an answer too long for one signal: base64 of the answer's JSON, `part` of `parts`. */
export interface AnswerPiece {
  part: number;
  parts: number;
  piece: string;
}

/** The signal bodies that carry `answer`: the answer itself, or (a long one: a revert of many files, a session with a long objective) its pieces in order. */
export function answerBodies(answer: ControlAnswer): ({ answer: ControlAnswer } | AnswerPiece)[] {
  const json = JSON.stringify(answer);
  if (Buffer.byteLength(json) <= MAX_ANSWER_BYTES) return [{ answer }];
  const text = Buffer.from(json).toString("base64");
  const parts = Math.ceil(text.length / PIECE_CHARS);
  return Array.from({ length: parts }, (_, part) => ({ part, parts, piece: text.slice(part * PIECE_CHARS, (part + 1) * PIECE_CHARS) }));
}

/** The pieces of one answer as they come (in any order, repeated when a request was repeated). */
export class AnswerAssembly {
  private readonly pieces = new Map<number, string>();

  /** The whole answer once its last missing piece came; undefined before. */
  add(piece: AnswerPiece): ControlAnswer | undefined {
    this.pieces.set(piece.part, piece.piece);
    if (this.pieces.size < piece.parts) return undefined;
    const text = Array.from({ length: piece.parts }, (_, part) => this.pieces.get(part) ?? "").join("");
    return JSON.parse(Buffer.from(text, "base64").toString("utf8")) as ControlAnswer;
  }
}

function isPiece(data: Record<string, unknown>): data is Record<string, unknown> & AnswerPiece {
  return typeof data.piece === "string" && Number.isInteger(data.part) && Number.isInteger(data.parts);
}

export interface ControlRelayDeps {
  store: ClusterStore;
  nodeId: string;
  log: Logger;
  /** Runs the action on this node (it owns the session). */
  act(sessionId: string, action: ControlAction, args: ControlArgs): Promise<unknown>;
}

interface Asked {
  resolve(answer: ControlAnswer): void;
  /** A long answer's pieces so far. */
  assembly?: AnswerAssembly;
}

interface Given {
  answer: ControlAnswer | null;
}

/**
 * Requests to a session's owner over the `control` signal, and their answers back on the same
 * channel: a request carries `{ requestId, from, to, args? }`, an answer `{ requestId, answer }`
 * (a long one `{ requestId, part, parts, piece }` per piece).
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
  async ask(sessionId: string, action: ControlAction, lease: LeaseInfo, closed: () => boolean, args: ControlArgs = {}): Promise<ControlAnswer | "moved"> {
    const { store, nodeId } = this.deps;
    const requestId = randomUUID();
    const answered = new Promise<ControlAnswer>((resolve) => this.asked.set(requestId, { resolve }));
    const request = { requestId, from: nodeId, to: lease.nodeId, ...(Object.keys(args).length ? { args } : {}) };
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
    if (isPiece(data!)) {
      const asked = this.asked.get(requestId);
      if (!asked) return;
      const answer = (asked.assembly ??= new AnswerAssembly()).add(data);
      if (answer) asked.resolve(answer);
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
    void Promise.allSettled([this.deps.act(sessionId, action, controlArgs(data!.args))]).then(([outcome]) => {
      given.answer = encodeAnswer(outcome!);
      this.reply(sessionId, action, requestId, given.answer);
    });
  }

  private reply(sessionId: string, action: ControlAction, requestId: string, answer: ControlAnswer): void {
    void (async () => {
      for (const body of answerBodies(answer)) await this.deps.store.sendControl(sessionId, action, { requestId, ...body });
    })().catch((error) => this.deps.log.warn("could not answer a control request", { sessionId, action, error: String(error) }));
  }
}

/** The arguments a request carried, kept to the fields an action reads. */
function controlArgs(value: unknown): ControlArgs {
  const messageId = (value as { messageId?: unknown } | undefined)?.messageId;
  return typeof messageId === "string" ? { messageId } : {};
}

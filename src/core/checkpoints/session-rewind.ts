import type { IdGenerator } from "../../base/ids.js";
import { VeilError } from "../../errors.js";
import type { SessionRow, Store } from "../../store/store.js";
import type { SessionWriter } from "../session-writer.js";
import type { CreateSessionInput } from "../session-types.js";
import { copyHistory, forkRows, revertTurns, unrevertLast, type RevertDeps, type RevertOutcome } from "./revert.js";
import type { WorkspaceTracker } from "./workspace-tracker.js";

/** What a revert, an unrevert and a fork use of the session manager that runs them (the session's owner). */
export interface RewindHost {
  store: Store;
  ids: IdGenerator;
  /** Absent: this runtime keeps no checkpoints. */
  tracker: WorkspaceTracker | undefined;
  get(id: string): Promise<SessionRow>;
  isRunning(id: string): boolean;
  create(input: CreateSessionInput): Promise<SessionRow>;
  /** Runs `write` with the session's writer over a fence of its own, as an idle session's compaction does (LEASE_LOST once another node holds it). */
  fenced<T>(id: string, write: (writer: SessionWriter) => Promise<T>): Promise<T>;
}

/**
 * Puts the files the turns from `messageId` on changed back and takes those turns out of
 * the model's history (their rows stay, flagged reverted). SESSION_BUSY while it runs.
 */
export function revertSession(host: RewindHost, id: string, messageId: string): Promise<RevertOutcome> {
  return rewind(host, id, (deps) => revertTurns(deps, id, messageId));
}

/** Undoes the last revert while no message came since (else CONFLICT). */
export function unrevertSession(host: RewindHost, id: string): Promise<RevertOutcome> {
  return rewind(host, id, (deps) => unrevertLast(deps, id));
}

/** A new top-level session of the same agent, model and mode whose history is a copy up to and including the turn of `messageId`. */
export async function forkSession(host: RewindHost, id: string, messageId?: string): Promise<SessionRow> {
  const source = await host.get(id);
  const rows = forkRows(await host.store.listMessages(id), messageId);
  const fork = await host.create({ agent: source.agent, mode: source.mode, model: source.model, reasoning: source.reasoning, budget_override: source.budget_override, forked_from: id, owner_key: source.owner_key });
  await copyHistory(host.store, host.ids, rows, fork.id);
  return fork;
}

/**
 * A revert or unrevert of an idle session, its writes fenced like a run's (a node that lost
 * the session writes none of them); an engine that keeps its own conversation starts again
 * from the history as it is then.
 */
async function rewind(host: RewindHost, id: string, apply: (deps: RevertDeps) => Promise<RevertOutcome>): Promise<RevertOutcome> {
  const session = await host.get(id);
  if (session.status === "closed") throw new VeilError("SESSION_CLOSED", `session "${id}" is closed`);
  if (host.isRunning(id) || session.status === "running") throw new VeilError("SESSION_BUSY", `session "${id}" is running; wait for its turn to end (or cancel it) first`);
  const tracker = host.tracker;
  if (!tracker) throw new VeilError("CONFIG_ERROR", "checkpoints are not kept by this runtime");
  return host.fenced(id, async (writer) => {
    const outcome = await apply({ store: writer.store, tracker, ids: host.ids });
    await writer.saveEngineState(null);
    return outcome;
  });
}

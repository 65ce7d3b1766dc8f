import { chmodSync, lstatSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { IdGenerator } from "../../base/ids.js";
import { VeilError } from "../../errors.js";
import type { CheckpointFile, FileChange, FileContent, MessageRow, Store } from "../../store/store.js";
import { fileContent } from "./chunking.js";
import { overwrite } from "./overwrite.js";
import type { WorkspaceTracker } from "./workspace-tracker.js";

export interface RevertDeps {
  store: Store;
  tracker: WorkspaceTracker;
  ids: IdGenerator;
}

export interface RevertOutcome {
  messageId: string;
  files: { path: string; change: FileChange }[];
}

/** What a revert's record keeps beside its files, to be undone. */
interface RevertFacts {
  messageIds: string[];
  checkpointIds: string[];
  /** The session's last message seq when it ran: an unrevert is refused once a message came after it. */
  lastSeq: number;
}

/**
 * Puts every file the turns from `messageId` on changed back as it was before that turn
 * (added files removed, deleted ones restored, modes kept) and flags those turns' rows
 * reverted. The files as the revert found them are stored first, as a "revert" record, so
 * an unrevert can put them back. The caller makes sure the session is not running.
 */
export async function revertTurns(deps: RevertDeps, sessionId: string, messageId: string): Promise<RevertOutcome> {
  const { store, tracker } = deps;
  const rows = await store.listMessages(sessionId);
  const target = rows.find((row) => row.id === messageId);
  if (!target || target.role !== "user") throw new VeilError("NOT_FOUND", `no user message "${messageId}" in session ${sessionId}`);
  if (target.reverted) throw new VeilError("VALIDATION_ERROR", `message "${messageId}" is reverted already`);
  // Changes left by a background process since the last turn are part of what is undone.
  await tracker.settle();
  const seqOf = new Map(rows.map((row) => [row.id, row.seq]));
  const turns = (await store.listCheckpoints(sessionId, { kind: "turn" })).filter((c) => !c.reverted && (seqOf.get(c.message_id) ?? -1) >= target.seq);
  // The oldest turn that touched a path holds its state from before them all.
  const restore = new Map<string, CheckpointFile>();
  for (const turn of turns) for (const file of turn.files) if (!restore.has(file.path)) restore.set(file.path, file);
  const found = currentStates(tracker.root, [...restore.keys()]);
  const facts: RevertFacts = { messageIds: rows.filter((r) => r.seq >= target.seq && !r.reverted).map((r) => r.id), checkpointIds: turns.map((t) => t.id), lastSeq: rows.at(-1)?.seq ?? 0 };
  const files = [...restore.values()].map((file) => ({ path: file.path, change: netChange(file, found.files.get(file.path)) }));
  await store.applyRevert({
    sessionId,
    messageIds: facts.messageIds,
    checkpointIds: facts.checkpointIds,
    record: { id: deps.ids.next("cp"), session_id: sessionId, message_id: messageId, kind: "revert", files: [...found.files.values()].map((f, i) => ({ ...f, change: files[i]!.change })), data: { ...facts } },
    contents: found.contents,
  });
  await putBack(deps, [...restore.values()]);
  return { messageId, files };
}

/** Undoes the session's last revert (files and flags) while no message came after it; else CONFLICT. */
export async function unrevertLast(deps: RevertDeps, sessionId: string): Promise<RevertOutcome> {
  const { store } = deps;
  const record = (await store.listCheckpoints(sessionId, { kind: "revert" })).at(-1);
  if (!record) throw new VeilError("CONFLICT", `session ${sessionId} has no revert to undo`);
  const facts = record.data as unknown as RevertFacts;
  const lastSeq = (await store.listMessages(sessionId)).at(-1)?.seq ?? 0;
  if (lastSeq !== facts.lastSeq || (await store.listInbox(sessionId)).length > 0) {
    throw new VeilError("CONFLICT", `a message was sent to session ${sessionId} after its last revert; it can no longer be undone`);
  }
  await putBack(deps, record.files);
  await store.undoRevert({ sessionId, messageIds: facts.messageIds, checkpointIds: facts.checkpointIds, recordId: record.id });
  return { messageId: record.message_id, files: record.files.map((f) => ({ path: f.path, change: f.change })) };
}

/** The rows a fork copies: what the model sees, up to and including the turn of `messageId` (default: all). */
export function forkRows(rows: readonly MessageRow[], messageId?: string): MessageRow[] {
  const visible = rows.filter((row) => !row.reverted);
  if (messageId === undefined) return visible;
  const at = visible.findIndex((row) => row.id === messageId);
  if (at < 0 || visible[at]!.role !== "user") throw new VeilError("NOT_FOUND", `no user message "${messageId}" in the session's history`);
  const next = visible.findIndex((row, i) => i > at && row.role === "user" && row.meta?.source !== "hook");
  return next < 0 ? visible : visible.slice(0, next);
}

/** The rows copied into the fork's session, in order, each with a new id (flags and kinds kept). */
export async function copyHistory(store: Store, ids: IdGenerator, rows: readonly MessageRow[], sessionId: string): Promise<void> {
  const compacted: string[] = [];
  for (const row of rows) {
    const id = ids.next("msg");
    await store.appendMessage({ id, session_id: sessionId, role: row.role, content: row.content, thinking: row.thinking, tool_calls: row.tool_calls, tool_call_id: row.tool_call_id, finish_reason: row.finish_reason, token_usage: row.token_usage, meta: row.meta, kind: row.kind });
    if (row.compacted) compacted.push(id);
  }
  if (compacted.length > 0) await store.setCompacted(sessionId, compacted);
}

/** Each path written back from its stored state (or removed), then taken in by the tracker (synchronous calls: a promise per call costs several times the call under load). */
async function putBack(deps: RevertDeps, files: readonly CheckpointFile[]): Promise<void> {
  const root = deps.tracker.root;
  for (const file of files) {
    const target = join(root, file.path);
    if (file.before_hash === null) {
      rmSync(target, { force: true });
      continue;
    }
    const data = await deps.store.readFileContent(file.before_hash);
    if (!data) throw new VeilError("INTERNAL_ERROR", `the stored content of ${file.path} (${file.before_hash}) is missing`);
    const mode = file.before_mode ?? 0o644;
    overwrite(target, data, mode);
    chmodSync(target, mode);
  }
  await deps.tracker.absorb(files.map((f) => f.path));
}

/** The paths as they are now, as checkpoint files (what an unrevert restores) and their contents. */
function currentStates(root: string, paths: readonly string[]): { files: Map<string, CheckpointFile>; contents: FileContent[] } {
  const files = new Map<string, CheckpointFile>();
  const contents: FileContent[] = [];
  for (const path of paths) {
    const stat = lstatSync(join(root, path), { throwIfNoEntry: false });
    if (!stat?.isFile()) {
      files.set(path, { path, change: "modified", before_hash: null, before_mode: null });
      continue;
    }
    const content = fileContent(readFileSync(join(root, path)));
    contents.push(content);
    files.set(path, { path, change: "modified", before_hash: content.hash, before_mode: stat.mode & 0o7777 });
  }
  return { files, contents };
}

/** What the reverted turns did to a path, all told: from its state before them to its state now. */
function netChange(before: CheckpointFile, now: CheckpointFile | undefined): FileChange {
  const existed = before.before_hash !== null;
  const exists = now !== undefined && now.before_hash !== null;
  if (!existed && exists) return "added";
  if (existed && !exists) return "deleted";
  return existed ? "modified" : before.change;
}


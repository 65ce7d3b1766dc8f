/**
 * What the store keeps to undo a session's turns: per turn, the files it changed with their
 * content and mode from before it, the content split into content-addressed chunks (one
 * copy of a chunk however many files and checkpoints hold it).
 */

export type FileChange = "added" | "modified" | "deleted";

/** "turn": what one turn changed. "revert": the files as a revert found them (what an unrevert puts back). */
export type CheckpointKind = "turn" | "revert";

export interface CheckpointFile {
  /** Relative to the workspace, with forward slashes. */
  path: string;
  change: FileChange;
  /** sha256 (hex) of the content before; null when the file did not exist. */
  before_hash: string | null;
  /** Permission bits before (e.g. 0o755); null when the file did not exist. */
  before_mode: number | null;
}

export interface CheckpointRow {
  id: string;
  session_id: string;
  /** The user message that started the turn (for a revert: the message it reverted from). */
  message_id: string;
  kind: CheckpointKind;
  /** A turn checkpoint whose changes a revert undid. */
  reverted: boolean;
  /** A revert's own facts: the message and checkpoint ids it flagged. */
  data: Record<string, unknown> | null;
  created_at: string;
  files: CheckpointFile[];
}

export type NewCheckpoint = Pick<CheckpointRow, "id" | "session_id" | "message_id" | "kind" | "files"> & Partial<Pick<CheckpointRow, "data">>;

/** One file's content to store: its hash and its chunks in order. */
export interface FileContent {
  hash: string;
  chunks: readonly { hash: string; data: Buffer }[];
}

/** A revert as one write: the flags it sets and the record an unrevert needs. */
export interface RevertWrite {
  sessionId: string;
  messageIds: readonly string[];
  checkpointIds: readonly string[];
  record: NewCheckpoint;
  contents: readonly FileContent[];
}

export interface CheckpointStore {
  /** The checkpoint, its files and the contents they need (chunks held already are skipped), in one transaction. */
  addCheckpoint(checkpoint: NewCheckpoint, contents: readonly FileContent[]): Promise<CheckpointRow>;
  /** A session's checkpoints, oldest first. */
  listCheckpoints(sessionId: string, options?: { kind?: CheckpointKind }): Promise<CheckpointRow[]>;
  /** The content of a stored file hash, chunks joined; undefined when none is stored. */
  readFileContent(hash: string): Promise<Buffer | undefined>;
  /** Flags the messages and turn checkpoints reverted and stores the revert's record, in one transaction. */
  applyRevert(write: RevertWrite): Promise<void>;
  /** Clears the flags a revert set and drops its record (content no checkpoint holds any more goes too). */
  undoRevert(input: { sessionId: string; messageIds: readonly string[]; checkpointIds: readonly string[]; recordId: string }): Promise<void>;
  /** Drops a session's checkpoints, and the content no other checkpoint holds. */
  deleteCheckpoints(sessionId: string): Promise<void>;
}

import type Database from "better-sqlite3";
import { lazyStatements } from "./statements.js";
import type { Clock } from "../../base/clock.js";
import type { CheckpointKind, CheckpointRow, FileContent, NewCheckpoint, RevertWrite } from "../checkpoints.js";
import { checkpointsFromRaw, type RawCheckpoint, type RawCheckpointFile } from "../rows.js";
import { SqliteAutomationTables } from "./automation-tables.js";

const SQL = {
  insertCheckpoint: `INSERT INTO checkpoints (id, session_id, message_id, kind, data, created_at)
    VALUES (@id, @session_id, @message_id, @kind, @data, @created_at)`,
  insertFile: `INSERT INTO checkpoint_files (checkpoint_id, path, change, before_hash, before_mode)
    VALUES (@checkpoint_id, @path, @change, @before_hash, @before_mode)`,
  insertFileChunk: "INSERT OR IGNORE INTO file_chunks (file_hash, pos, chunk_hash) VALUES (?, ?, ?)",
  insertChunk: "INSERT OR IGNORE INTO chunks (hash, data) VALUES (?, ?)",
  hasFile: "SELECT 1 FROM file_chunks WHERE file_hash = ? LIMIT 1",
  listCheckpoints: `SELECT * FROM checkpoints WHERE session_id = @session_id AND (@kind IS NULL OR kind = @kind) ORDER BY rowid`,
  listFiles: `SELECT f.* FROM checkpoint_files f JOIN checkpoints c ON c.id = f.checkpoint_id
    WHERE c.session_id = ? ORDER BY f.path`,
  readFile: `SELECT c.data FROM file_chunks f JOIN chunks c ON c.hash = f.chunk_hash WHERE f.file_hash = ? ORDER BY f.pos`,
  setMessageReverted: "UPDATE messages SET reverted = @reverted WHERE session_id = @session_id AND id = @id",
  setCheckpointReverted: "UPDATE checkpoints SET reverted = @reverted WHERE session_id = @session_id AND id = @id",
  deleteCheckpoint: "DELETE FROM checkpoints WHERE session_id = ? AND id = ?",
  deleteSessionCheckpoints: "DELETE FROM checkpoints WHERE session_id = ?",
  dropUnheldFiles: `DELETE FROM file_chunks WHERE file_hash NOT IN (SELECT before_hash FROM checkpoint_files WHERE before_hash IS NOT NULL)`,
  dropUnheldChunks: `DELETE FROM chunks WHERE hash NOT IN (SELECT chunk_hash FROM file_chunks)`,
};

type Prepared = { readonly [K in keyof typeof SQL]: Database.Statement };

/** The checkpoint tables of SqliteStore (see store/checkpoints.ts); each write is one IMMEDIATE transaction. */
export abstract class SqliteCheckpointTables extends SqliteAutomationTables {
  private readonly cp: Prepared;
  private readonly addTx: (checkpoint: NewCheckpoint, contents: readonly FileContent[], createdAt: string) => void;
  private readonly revertTx: (write: RevertWrite, createdAt: string) => void;
  private readonly undoTx: (input: { sessionId: string; messageIds: readonly string[]; checkpointIds: readonly string[]; recordId: string }) => void;
  private readonly deleteTx: (sessionId: string) => void;

  protected constructor(db: Database.Database, clock: Clock) {
    super(db, clock);
    this.cp = lazyStatements(db, SQL);
    const add = db.transaction((checkpoint: NewCheckpoint, contents: readonly FileContent[], createdAt: string) => this.insert(checkpoint, contents, createdAt));
    this.addTx = (checkpoint, contents, createdAt) => add.immediate(checkpoint, contents, createdAt);
    const revert = db.transaction((write: RevertWrite, createdAt: string) => {
      this.flag(write.sessionId, write.messageIds, write.checkpointIds, 1);
      this.insert(write.record, write.contents, createdAt);
    });
    this.revertTx = (write, createdAt) => revert.immediate(write, createdAt);
    const undo = db.transaction((input: { sessionId: string; messageIds: readonly string[]; checkpointIds: readonly string[]; recordId: string }) => {
      this.flag(input.sessionId, input.messageIds, input.checkpointIds, 0);
      this.cp.deleteCheckpoint.run(input.sessionId, input.recordId);
      this.dropUnheld();
    });
    this.undoTx = (input) => undo.immediate(input);
    const drop = db.transaction((sessionId: string) => {
      this.cp.deleteSessionCheckpoints.run(sessionId);
      this.dropUnheld();
    });
    this.deleteTx = (sessionId) => drop.immediate(sessionId);
  }

  async addCheckpoint(checkpoint: NewCheckpoint, contents: readonly FileContent[]): Promise<CheckpointRow> {
    this.assertOpen();
    const createdAt = this.nowIso();
    this.addTx(checkpoint, contents, createdAt);
    return { ...checkpoint, data: checkpoint.data ?? null, reverted: false, created_at: createdAt };
  }

  async listCheckpoints(sessionId: string, options: { kind?: CheckpointKind } = {}): Promise<CheckpointRow[]> {
    this.assertOpen();
    const rows = this.cp.listCheckpoints.all({ session_id: sessionId, kind: options.kind ?? null }) as RawCheckpoint[];
    return checkpointsFromRaw(rows, this.cp.listFiles.all(sessionId) as RawCheckpointFile[]);
  }

  async readFileContent(hash: string): Promise<Buffer | undefined> {
    this.assertOpen();
    if (!this.cp.hasFile.get(hash)) return undefined;
    return Buffer.concat((this.cp.readFile.all(hash) as { data: Buffer }[]).map((r) => r.data));
  }

  async applyRevert(write: RevertWrite): Promise<void> {
    this.assertOpen();
    this.revertTx(write, this.nowIso());
  }

  async undoRevert(input: { sessionId: string; messageIds: readonly string[]; checkpointIds: readonly string[]; recordId: string }): Promise<void> {
    this.assertOpen();
    this.undoTx(input);
  }

  async deleteCheckpoints(sessionId: string): Promise<void> {
    this.assertOpen();
    this.deleteTx(sessionId);
  }

  private insert(checkpoint: NewCheckpoint, contents: readonly FileContent[], createdAt: string): void {
    const { cp } = this;
    cp.insertCheckpoint.run({ id: checkpoint.id, session_id: checkpoint.session_id, message_id: checkpoint.message_id, kind: checkpoint.kind, data: checkpoint.data ? JSON.stringify(checkpoint.data) : null, created_at: createdAt });
    for (const file of checkpoint.files) cp.insertFile.run({ checkpoint_id: checkpoint.id, ...file });
    for (const content of contents) {
      if (cp.hasFile.get(content.hash)) continue;
      content.chunks.forEach((chunk, pos) => {
        cp.insertChunk.run(chunk.hash, chunk.data);
        cp.insertFileChunk.run(content.hash, pos, chunk.hash);
      });
    }
  }

  private flag(sessionId: string, messageIds: readonly string[], checkpointIds: readonly string[], reverted: 0 | 1): void {
    for (const id of messageIds) this.cp.setMessageReverted.run({ session_id: sessionId, id, reverted });
    for (const id of checkpointIds) this.cp.setCheckpointReverted.run({ session_id: sessionId, id, reverted });
  }

  private dropUnheld(): void {
    this.cp.dropUnheldFiles.run();
    this.cp.dropUnheldChunks.run();
  }
}

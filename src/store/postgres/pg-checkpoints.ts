import type { Clock } from "../../base/clock.js";
import type { CheckpointKind, CheckpointRow, FileContent, NewCheckpoint, RevertWrite } from "../checkpoints.js";
import type { Lease } from "../cluster.js";
import { checkpointsFromRaw, type RawCheckpoint, type RawCheckpointFile } from "../rows.js";
import type { Database, Queryable } from "./database.js";
import { PgAutomationTables } from "./pg-automation-tables.js";

const SQL = {
  insertCheckpoint: "INSERT INTO checkpoints (id, session_id, message_id, kind, data, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
  insertFiles: `INSERT INTO checkpoint_files (checkpoint_id, path, change, before_hash, before_mode)
    SELECT $1::text, * FROM unnest($2::text[], $3::text[], $4::text[], $5::int[])`,
  insertChunks: "INSERT INTO chunks (hash, data) SELECT * FROM unnest($1::text[], $2::bytea[]) ON CONFLICT DO NOTHING",
  insertFileChunks: "INSERT INTO file_chunks (file_hash, pos, chunk_hash) SELECT * FROM unnest($1::text[], $2::int[], $3::text[]) ON CONFLICT DO NOTHING",
  listCheckpoints: "SELECT id, session_id, message_id, kind, reverted, data, created_at FROM checkpoints WHERE session_id = $1 AND ($2::text IS NULL OR kind = $2) ORDER BY pos",
  listFiles: `SELECT f.checkpoint_id, f.path, f.change, f.before_hash, f.before_mode FROM checkpoint_files f
    JOIN checkpoints c ON c.id = f.checkpoint_id WHERE c.session_id = $1 ORDER BY f.path`,
  readFile: "SELECT c.data FROM file_chunks f JOIN chunks c ON c.hash = f.chunk_hash WHERE f.file_hash = $1 ORDER BY f.pos",
  setMessagesReverted: "UPDATE messages SET reverted = $3 WHERE session_id = $1 AND id = ANY ($2::text[])",
  setCheckpointsReverted: "UPDATE checkpoints SET reverted = $3 WHERE session_id = $1 AND id = ANY ($2::text[])",
  deleteCheckpoint: "DELETE FROM checkpoints WHERE session_id = $1 AND id = $2",
  deleteSessionCheckpoints: "DELETE FROM checkpoints WHERE session_id = $1",
  // A checkpoint written meanwhile waits for the drop (its checkpoint_files insert conflicts with this lock), then stores its content anew.
  lockFiles: "LOCK TABLE checkpoint_files IN SHARE ROW EXCLUSIVE MODE",
  dropUnheldFiles: "DELETE FROM file_chunks WHERE file_hash NOT IN (SELECT before_hash FROM checkpoint_files WHERE before_hash IS NOT NULL)",
  dropUnheldChunks: "DELETE FROM chunks WHERE hash NOT IN (SELECT chunk_hash FROM file_chunks)",
};

/** The checkpoint tables of PgStore (see store/checkpoints.ts); each write is one transaction, fenced like the session's other writes. */
export abstract class PgCheckpointTables extends PgAutomationTables {
  protected constructor(db: Database, clock: Clock, lease?: Lease, ownsPool = true) {
    super(db, clock, lease, ownsPool);
  }

  async addCheckpoint(checkpoint: NewCheckpoint, contents: readonly FileContent[]): Promise<CheckpointRow> {
    const createdAt = this.nowIso();
    await this.write("add checkpoint", checkpoint.session_id, (on) => on.transaction((tx) => insertCheckpoint(tx, checkpoint, contents, createdAt)));
    return { ...checkpoint, data: checkpoint.data ?? null, reverted: false, created_at: createdAt };
  }

  async listCheckpoints(sessionId: string, options: { kind?: CheckpointKind } = {}): Promise<CheckpointRow[]> {
    return this.direct("list checkpoints", sessionId, async (on) => {
      const rows = await on.sql<RawCheckpoint & Record<string, unknown>>(SQL.listCheckpoints, [sessionId, options.kind ?? null]);
      const files = await on.sql<RawCheckpointFile & Record<string, unknown>>(SQL.listFiles, [sessionId]);
      return checkpointsFromRaw(rows.rows, files.rows);
    });
  }

  async readFileContent(hash: string): Promise<Buffer | undefined> {
    const { rows } = await this.direct("read checkpoint content", undefined, (on) => on.sql<{ data: Buffer }>(SQL.readFile, [hash]));
    return rows.length === 0 ? undefined : Buffer.concat(rows.map((r) => r.data));
  }

  async applyRevert(write: RevertWrite): Promise<void> {
    const createdAt = this.nowIso();
    await this.write("revert", write.sessionId, (on) =>
      on.transaction(async (tx) => {
        await flag(tx, write.sessionId, write.messageIds, write.checkpointIds, true);
        await insertCheckpoint(tx, write.record, write.contents, createdAt);
      }),
    );
  }

  async undoRevert(input: { sessionId: string; messageIds: readonly string[]; checkpointIds: readonly string[]; recordId: string }): Promise<void> {
    await this.write("unrevert", input.sessionId, (on) =>
      on.transaction(async (tx) => {
        await tx.sql(SQL.lockFiles);
        await flag(tx, input.sessionId, input.messageIds, input.checkpointIds, false);
        await tx.sql(SQL.deleteCheckpoint, [input.sessionId, input.recordId]);
        await dropUnheld(tx);
      }),
    );
  }

  async deleteCheckpoints(sessionId: string): Promise<void> {
    await this.write("delete checkpoints", sessionId, (on) =>
      on.transaction(async (tx) => {
        await tx.sql(SQL.lockFiles);
        await tx.sql(SQL.deleteSessionCheckpoints, [sessionId]);
        await dropUnheld(tx);
      }),
    );
  }
}

/** The checkpoint row, then its files (the row lock a content drop waits on), then the content. */
async function insertCheckpoint(tx: Queryable, checkpoint: NewCheckpoint, contents: readonly FileContent[], createdAt: string): Promise<void> {
  await tx.sql(SQL.insertCheckpoint, [checkpoint.id, checkpoint.session_id, checkpoint.message_id, checkpoint.kind, checkpoint.data ? JSON.stringify(checkpoint.data) : null, createdAt]);
  const files = checkpoint.files;
  if (files.length > 0) {
    await tx.sql(SQL.insertFiles, [checkpoint.id, files.map((f) => f.path), files.map((f) => f.change), files.map((f) => f.before_hash), files.map((f) => f.before_mode)]);
  }
  const chunks = new Map<string, Buffer>();
  const fileHashes: string[] = [];
  const positions: number[] = [];
  const chunkHashes: string[] = [];
  for (const content of contents) {
    content.chunks.forEach((chunk, pos) => {
      chunks.set(chunk.hash, chunk.data);
      fileHashes.push(content.hash);
      positions.push(pos);
      chunkHashes.push(chunk.hash);
    });
  }
  if (chunks.size === 0) return;
  await tx.sql(SQL.insertChunks, [[...chunks.keys()], [...chunks.values()]]);
  await tx.sql(SQL.insertFileChunks, [fileHashes, positions, chunkHashes]);
}

async function flag(tx: Queryable, sessionId: string, messageIds: readonly string[], checkpointIds: readonly string[], reverted: boolean): Promise<void> {
  await tx.sql(SQL.setMessagesReverted, [sessionId, messageIds, reverted]);
  await tx.sql(SQL.setCheckpointsReverted, [sessionId, checkpointIds, reverted]);
}

/** Content no checkpoint holds; the caller took lockFiles first (before its own deletes, so two drops never deadlock). */
async function dropUnheld(tx: Queryable): Promise<void> {
  await tx.sql(SQL.dropUnheldFiles);
  await tx.sql(SQL.dropUnheldChunks);
}

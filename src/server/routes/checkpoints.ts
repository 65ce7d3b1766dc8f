import { Type, type Static } from "../../schema.js";
import type { Hono } from "hono";
import type { CheckpointRow } from "../../store/store.js";
import { jsonBody } from "../body.js";
import type { AppEnv, ServerState } from "../context.js";
import { sessionView } from "../../core/session-view.js";

export const RevertBody = Type.Object({ messageId: Type.String({ minLength: 1 }) }, { additionalProperties: false });
export const ForkBody = Type.Object({ messageId: Type.Optional(Type.String({ minLength: 1 })) }, { additionalProperties: false });

/** A turn's checkpoint as clients see it (the stored hashes and modes stay inside). */
export function publicCheckpoint(row: CheckpointRow) {
  return { id: row.id, messageId: row.message_id, createdAt: row.created_at, files: row.files.map((f) => ({ path: f.path, change: f.change })) };
}

/**
 * Checkpoints of a session's turns, and undoing them:
 * - `GET /sessions/:id/checkpoints` → `{ checkpoints: [...], revert: { messageId, files } | null, reverted: [messageId] }` (turns not reverted, oldest first; `revert`: the revert an unrevert would undo; `reverted`: the user messages whose turns are reverted)
 * - `POST /sessions/:id/revert { messageId }` → `{ messageId, files }`; 409 SESSION_BUSY while it runs
 * - `POST /sessions/:id/unrevert` → `{ messageId, files }`; 409 CONFLICT once a message came after the revert
 * - `POST /sessions/:id/fork { messageId? }` → 201, the new session
 */
export function checkpointRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const { runtime } = state;
  const sessions = runtime.sessions;
  const publicSession = sessionView(runtime.config, runtime.agents);

  app.get("/sessions/:id/checkpoints", async (c) => {
    const id = c.req.param("id");
    await sessions.get(id);
    const all = await runtime.store.listCheckpoints(id);
    const last = all.filter((row) => row.kind === "revert").at(-1);
    const rows = await runtime.store.listMessages(id);
    const lastSeq = rows.at(-1)?.seq ?? 0;
    const undoable = last && (last.data as { lastSeq?: number } | null)?.lastSeq === lastSeq;
    return c.json({
      checkpoints: all.filter((row) => row.kind === "turn" && !row.reverted).map(publicCheckpoint),
      revert: undoable ? { messageId: last.message_id, files: last.files.map((f) => ({ path: f.path, change: f.change })) } : null,
      reverted: rows.filter((row) => row.reverted && row.role === "user").map((row) => row.id),
    });
  });

  app.post("/sessions/:id/revert", async (c) => {
    const body = await jsonBody<Static<typeof RevertBody>>(c, RevertBody);
    return c.json(await sessions.revert(c.req.param("id"), body.messageId));
  });

  app.post("/sessions/:id/unrevert", async (c) => c.json(await sessions.unrevert(c.req.param("id"))));

  app.post("/sessions/:id/fork", async (c) => {
    const body = await jsonBody<Static<typeof ForkBody>>(c, ForkBody);
    return c.json(publicSession(await sessions.fork(c.req.param("id"), body.messageId)), 201);
  });
}

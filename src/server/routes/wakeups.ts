import { Type, type Static } from "../../schema.js";
import type { Hono } from "hono";
import { VeilError } from "../../errors.js";
import type { WakeupService } from "../../core/wakeups.js";
import { jsonBody } from "../body.js";
import type { AppEnv, ServerState } from "../context.js";

export const ArmBody = Type.Object(
  {
    time: Type.Union([Type.String({ minLength: 1 }), Type.Number()]),
    message: Type.Optional(Type.String()),
    loop: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

/**
 * The session's wake-up schedule (schedule_wakeup's) over HTTP:
 * - `GET /sessions/:id/wakeup` → `{ wakeup: { time, message, loop, nextFireAt, intervalMs } | null }`
 * - `POST /sessions/:id/wakeup` `{ time, message?, loop? }` → `{ wakeup }` (`time: "0"` cancels → `{ wakeup: null }`)
 * - `DELETE /sessions/:id/wakeup` → `{ ok: true, removed, wakeup: null }`
 */
export function wakeupRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const { runtime } = state;
  const service = (): WakeupService => runtime.wakeups;

  app.get("/sessions/:id/wakeup", async (c) => {
    const id = c.req.param("id");
    await runtime.sessions.get(id);
    return c.json({ wakeup: await service().get(id) });
  });

  app.post("/sessions/:id/wakeup", async (c) => {
    const id = c.req.param("id");
    const body = await jsonBody<Static<typeof ArmBody>>(c, ArmBody);
    const session = await runtime.sessions.get(id);
    if (session.status === "closed") throw new VeilError("SESSION_CLOSED", `session "${id}" is closed`);
    return c.json({ wakeup: await service().arm(id, body) });
  });

  app.delete("/sessions/:id/wakeup", async (c) => {
    const id = c.req.param("id");
    await runtime.sessions.get(id);
    const removed = await service().cancel(id);
    return c.json({ ok: true, removed, wakeup: null });
  });
}

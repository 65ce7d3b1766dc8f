import { Type, type Static } from "../../schema.js";
import type { Hono } from "hono";
import { VeilError } from "../../errors.js";
import { MAX_EVERY_SECONDS } from "../../core/schedules/timing.js";
import { jsonBody } from "../body.js";
import type { AppEnv, ServerState } from "../context.js";
import { assertMayStart } from "../access.js";
import { ownerFor, ownerScope } from "../../core/access/principal.js";

export const ScheduleBody = Type.Object(
  {
    agent: Type.String({ minLength: 1, description: "The agent that runs the prompt." }),
    prompt: Type.String({ minLength: 1, description: "The message each run sends." }),
    cron: Type.Optional(Type.String({ minLength: 1, description: "Five-field cron expression, UTC (minute hour day-of-month month day-of-week)." })),
    everySeconds: Type.Optional(Type.Number({ description: `Interval in seconds, at least 1 (at most ${MAX_EVERY_SECONDS}).` })),
    session: Type.Optional(Type.String({ minLength: 1, description: '"new" (default): a new session per run; or the id of an open session of the agent.' })),
    enabled: Type.Optional(Type.Boolean({ description: "default: true" })),
  },
  { additionalProperties: false },
);

export const SchedulePatchBody = Type.Object({ enabled: Type.Boolean() }, { additionalProperties: false });

const MAX_RUNS = 1000;

/**
 * Schedules:
 * - `POST /schedules { agent, prompt, cron | everySeconds, session?, enabled? }` → 201 the schedule
 * - `GET /schedules` → `{ schedules: [ … ] }` · `GET /schedules/:id` → the schedule
 * - `PATCH /schedules/:id { enabled }` → the schedule · `DELETE /schedules/:id` → `{ ok: true, id }`
 * - `GET /schedules/:id/runs?limit=N` → `{ runs: [ { at, sessionId, status, error? } ] }`, newest first
 *
 * A schedule made with a key is that key's, and so are its runs' sessions: a key without
 * admin sees and changes its own schedules only (any other answers 404).
 */
export function scheduleRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const schedules = () => state.runtime.schedules;

  app.post("/schedules", async (c) => {
    const body = await jsonBody<Static<typeof ScheduleBody>>(c, ScheduleBody);
    const principal = c.get("principal");
    assertMayStart(principal, body.agent);
    return c.json(await schedules().create(body, ownerFor(principal)), 201);
  });
  app.get("/schedules", async (c) => c.json({ schedules: await schedules().list(ownerScope(c.get("principal"))) }));
  app.get("/schedules/:id", async (c) => c.json(await schedules().get(c.req.param("id"), ownerScope(c.get("principal")))));
  app.patch("/schedules/:id", async (c) => {
    const body = await jsonBody<Static<typeof SchedulePatchBody>>(c, SchedulePatchBody);
    return c.json(await schedules().setEnabled(c.req.param("id"), body.enabled, ownerScope(c.get("principal"))));
  });
  app.delete("/schedules/:id", async (c) => {
    const id = c.req.param("id");
    await schedules().delete(id, ownerScope(c.get("principal")));
    return c.json({ ok: true, id });
  });
  app.get("/schedules/:id/runs", async (c) => {
    const limit = c.req.query("limit") === undefined ? 100 : Number(c.req.query("limit"));
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_RUNS) throw new VeilError("VALIDATION_ERROR", `limit must be an integer from 1 to ${MAX_RUNS}`);
    return c.json({ runs: await schedules().runs(c.req.param("id"), limit, ownerScope(c.get("principal"))) });
  });
}

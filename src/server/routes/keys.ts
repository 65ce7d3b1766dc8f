import type { Hono } from "hono";
import { Type, type Static } from "../../schema.js";
import type { RequestAuditRow } from "../../store/store.js";
import { keyView } from "../../core/access/keys.js";
import { jsonBody } from "../body.js";
import type { AppEnv, ServerState } from "../context.js";
import { parseSequence } from "../sse.js";

export const KeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    scopes: Type.Array(Type.Union([Type.Literal("read"), Type.Literal("chat"), Type.Literal("admin")]), { minItems: 1 }),
    agents: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    requestsPerMinute: Type.Optional(Type.Integer({ minimum: 1 })),
    budgetUsd: Type.Optional(Type.Number({ minimum: 0 })),
    expiresAt: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);

export function publicAuditEntry(row: RequestAuditRow) {
  return { seq: row.seq, at: row.at, key: row.key_id, method: row.method, path: row.path, status: row.status, ...(row.session_id ? { sessionId: row.session_id } : {}) };
}

/**
 * The admin's key management and audit trail (every route here needs the `admin` scope,
 * see access.ts): `POST /keys` → 201 with the key's value, shown only then; `GET /keys`,
 * `GET /keys/:id`, `DELETE /keys/:id` (revoke); `GET /audit?after=&limit=`.
 */
export function keyRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const { keys, store } = state.runtime;
  app.post("/keys", async (c) => {
    const body = await jsonBody<Static<typeof KeyBody>>(c, KeyBody);
    const { row, key } = await keys.create(body);
    return c.json({ ...keyView(row, 0), key }, 201);
  });
  app.get("/keys", async (c) => c.json({ keys: (await keys.list()).map(({ row, spentUsd }) => keyView(row, spentUsd)) }));
  app.get("/keys/:id", async (c) => {
    const { row, spentUsd } = await keys.get(c.req.param("id"));
    return c.json(keyView(row, spentUsd));
  });
  app.delete("/keys/:id", async (c) => {
    const row = await keys.revoke(c.req.param("id"));
    return c.json(keyView(row, await keys.spent(row.id)));
  });
  app.get("/audit", async (c) => {
    const after = parseSequence(c.req.query("after"), "after") ?? 0;
    const limit = parseSequence(c.req.query("limit"), "limit") ?? 100;
    return c.json({ entries: (await store.listRequestAudit({ after, limit })).map(publicAuditEntry) });
  });
}

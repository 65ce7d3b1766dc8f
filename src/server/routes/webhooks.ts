import type { Hono } from "hono";
import { VeilError } from "../../errors.js";
import type { WebhookDeliveryStatus } from "../../store/store.js";
import { DELIVERY_HEADER, SIGNATURE_HEADER } from "../../core/webhooks/signature.js";
import type { AppEnv, ServerState } from "../context.js";
import { ownerScope } from "../../core/access/principal.js";

const STATUSES: readonly WebhookDeliveryStatus[] = ["pending", "delivered", "failed"];
const MAX_LIST = 1000;

/** `POST /webhooks/<name>` authenticates by its signature, not by the bearer secret. */
export function isInboundWebhookRequest(method: string, path: string): boolean {
  return method === "POST" && /^\/webhooks\/[^/]+$/.test(path);
}

/**
 * Webhooks:
 * - `POST /webhooks/:name` (no bearer; `X-Veil-Signature: sha256=<hex HMAC-SHA256 of the raw
 *   body>`, optional `X-Veil-Delivery`) → 202 `{ sessionId }`; 401 on a missing or wrong
 *   signature, 404 WEBHOOK_NOT_FOUND for a name settings.webhooks.in does not define
 * - `GET /webhooks/deliveries?status=&limit=` → `{ deliveries: [ … ] }`, newest first; a key
 *   without admin gets those of its own sessions, among the newest 1000
 */
export function webhookRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const { runtime } = state;

  app.get("/webhooks/deliveries", async (c) => {
    const status = c.req.query("status");
    if (status !== undefined && !STATUSES.includes(status as WebhookDeliveryStatus)) throw new VeilError("VALIDATION_ERROR", `status must be one of ${STATUSES.join(", ")}`);
    const limit = c.req.query("limit") === undefined ? 100 : Number(c.req.query("limit"));
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST) throw new VeilError("VALIDATION_ERROR", `limit must be an integer from 1 to ${MAX_LIST}`);
    const owner = ownerScope(c.get("principal"));
    if (owner === undefined) return c.json({ deliveries: await runtime.webhooks.outbound.list({ status: status as WebhookDeliveryStatus | undefined, limit }) });
    // A key without admin sees the deliveries of its own sessions only (a delivery carries its session's reply).
    const newest = await runtime.webhooks.outbound.list({ status: status as WebhookDeliveryStatus | undefined, limit: MAX_LIST });
    const owners = await Promise.all(newest.map((delivery) => runtime.owners.of(delivery.sessionId)));
    return c.json({ deliveries: newest.filter((_, i) => owners[i] === owner).slice(0, limit) });
  });

  app.post("/webhooks/:name", async (c) => {
    const name = c.req.param("name");
    // Unknown names answer 404 before anything is read.
    runtime.webhooks.inbound.hook(name);
    const body = new Uint8Array(await c.req.arrayBuffer());
    const { sessionId, duplicate } = await runtime.webhooks.inbound.receive(name, {
      body,
      signature: c.req.header(SIGNATURE_HEADER),
      deliveryId: c.req.header(DELIVERY_HEADER),
    });
    return c.json({ sessionId, ...(duplicate ? { duplicate: true } : {}) }, 202);
  });
}

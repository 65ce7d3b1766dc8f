import type { Hono } from "hono";
import type { AppEnv, ServerState } from "../context.js";
import { apiError } from "../errors.js";

/** GET /metrics: the runtime's Prometheus registry in the text exposition format (a read: the bearer secret, like every route). */
export function metricsRoutes(app: Hono<AppEnv>, state: ServerState): void {
  app.get("/metrics", async (c) => {
    const metrics = state.runtime.metrics;
    if (!metrics) return apiError(c, "NOT_FOUND", "metrics are kept by a serving runtime (veil serve) only");
    return c.body(await metrics.text(), 200, { "content-type": metrics.contentType, "cache-control": "no-store" });
  });
}

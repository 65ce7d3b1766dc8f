import type { Hono } from "hono";
import type { AppEnv, ServerState } from "../context.js";
import { apiError } from "../errors.js";

/** GET /metrics: the runtime's metrics (the first scrape loads prom-client) in the text exposition format (a read: the bearer secret, like every route). */
export function metricsRoutes(app: Hono<AppEnv>, state: ServerState): void {
  app.get("/metrics", async (c) => {
    const metrics = state.runtime.metrics;
    if (!metrics) return apiError(c, "NOT_FOUND", "metrics are kept by a serving runtime (veil serve) only");
    const { text, contentType } = await metrics.scrape();
    return c.body(text, 200, { "content-type": contentType, "cache-control": "no-store" });
  });
}

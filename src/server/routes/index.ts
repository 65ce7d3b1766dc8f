import type { RouteModule } from "../context.js";
import { openApiRoutes } from "../openapi.js";
import { checkpointRoutes } from "./checkpoints.js";
import { completionRoutes } from "./completions.js";
import { dashboardRoutes } from "./dashboard.js";
import { keyRoutes } from "./keys.js";
import { memoryRoutes } from "./memory.js";
import { metricsRoutes } from "./metrics.js";
import { modelRoutes } from "./models.js";
import { remoteMethodRoutes, streamTokenRoutes } from "./remote-methods.js";
import { scheduleRoutes } from "./schedules.js";
import { wakeupRoutes } from "./wakeups.js";
import { webhookRoutes } from "./webhooks.js";

/** Feature route modules beyond sessions and agents; each feature adds its own here. */
export const extraRouteModules: readonly RouteModule[] = [memoryRoutes, completionRoutes, modelRoutes, wakeupRoutes, checkpointRoutes, scheduleRoutes, webhookRoutes, remoteMethodRoutes, streamTokenRoutes, keyRoutes, metricsRoutes, openApiRoutes, dashboardRoutes];

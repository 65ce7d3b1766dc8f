import type { RouteModule } from "../context.js";
import { openApiRoutes } from "../openapi.js";
import { completionRoutes } from "./completions.js";
import { dashboardRoutes } from "./dashboard.js";
import { keyRoutes } from "./keys.js";
import { memoryRoutes } from "./memory.js";
import { modelRoutes } from "./models.js";
import { remoteMethodRoutes, streamTokenRoutes } from "./remote-methods.js";
import { wakeupRoutes } from "./wakeups.js";

/** Feature route modules beyond sessions and agents; each feature adds its own here. */
export const extraRouteModules: readonly RouteModule[] = [memoryRoutes, completionRoutes, modelRoutes, wakeupRoutes, remoteMethodRoutes, streamTokenRoutes, keyRoutes, openApiRoutes, dashboardRoutes];

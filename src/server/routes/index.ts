import type { RouteModule } from "../context.js";
import { completionRoutes } from "./completions.js";
import { memoryRoutes } from "./memory.js";

/** Feature route modules beyond sessions and agents; each feature adds its own here. */
export const extraRouteModules: readonly RouteModule[] = [memoryRoutes, completionRoutes];

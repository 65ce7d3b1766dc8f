import type { Hono } from "hono";
import type { Runtime } from "../runtime.js";

export interface ServerState {
  runtime: Runtime;
  secret: string;
  /** Host header values this server answers to (DNS-rebinding guard). */
  allowedHosts: Set<string>;
  /** Overrides for tests: heartbeat interval of SSE streams. */
  heartbeatMs?: number;
}

export type AppEnv = { Variables: { authenticated: boolean } };

/** A feature registers its routes on the app (sessions, memory, wakeups, remote methods…). */
export type RouteModule = (app: Hono<AppEnv>, state: ServerState) => void;

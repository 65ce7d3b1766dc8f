import type { Hono } from "hono";
import type { Runtime } from "../runtime.js";

export interface ServerState {
  runtime: Runtime;
  secret: string;
  /**
   * Host header values this server answers to (DNS-rebinding guard); null when it
   * listens on every interface, where any Host is fine but Origin must match it.
   */
  allowedHosts: Set<string> | null;
  /** Overrides for tests: heartbeat interval of SSE streams. */
  heartbeatMs?: number;
}

export type AppEnv = { Variables: { authenticated: boolean } };

/** A feature registers its routes on the app (sessions, memory, wakeups, remote methods…). */
export type RouteModule = (app: Hono<AppEnv>, state: ServerState) => void;

import type { Hono } from "hono";
import type { Principal } from "../core/access/principal.js";
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

export type AppEnv = {
  Variables: {
    /** True when the request carried a bearer credential (the secret or a key), not a stream token. */
    authenticated: boolean;
    /** Who the request acts as (set for every route but the public ones). */
    principal: Principal;
    /** The session a request concerns, for its audit entry (a path's, or the one it created). */
    auditSessionId?: string;
  };
};

/** A feature registers its routes on the app (sessions, memory, wakeups, remote methods…). */
export type RouteModule = (app: Hono<AppEnv>, state: ServerState) => void;

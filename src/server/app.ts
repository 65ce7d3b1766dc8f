import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { fairTurn } from "../base/fair-turns.js";
import { VERSION } from "../version.js";
import { accessControl } from "./access.js";
import { hostAllowed, hostWithPort, originAllowed } from "./auth.js";
import type { AppEnv, RouteModule, ServerState } from "./context.js";
import { corsPolicy } from "./cors.js";
import { apiError, errorResponse } from "./errors.js";
import { answerHeadWithGet } from "./head.js";
import { agentRoutes } from "./routes/agents.js";
import { DASHBOARD_PATHS } from "./routes/dashboard.js";
import { sessionRoutes } from "./routes/sessions.js";
import { eventRoutes } from "./routes/events.js";
import { extraRouteModules } from "./routes/index.js";
import { sandboxStatus } from "../tools/shared/sandbox/session.js";
import { isInboundWebhookRequest } from "./routes/webhooks.js";

/** Paths reachable without the bearer secret: health and the dashboard's static files. */
const PUBLIC_PATHS = new Set(["/health", ...DASHBOARD_PATHS]);
const READS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Builds the HTTP app. It does not listen (see listen.ts), so tests can drive it
 * in process with app.request() as well as over a real port.
 */
export function createApp(state: ServerState, modules: readonly RouteModule[] = extraRouteModules): Hono<AppEnv> {
  const { runtime } = state;
  const app = new Hono<AppEnv>();

  app.onError((error, c) => errorResponse(c, error, runtime.log));
  app.notFound((c) => apiError(c, "NOT_FOUND", `no route ${c.req.method} ${c.req.path}`));

  // Reads (a /health, a session's state) are answered at once; a burst of writes (200 chats
  // arriving together) takes fair turns with the sockets first (see fair-turns.ts).
  app.use("*", async (c, next) => {
    if (!READS.has(c.req.method)) await fairTurn();
    return next();
  });

  const cors = corsPolicy(runtime.config.settings);
  // Bound to every interface, the server is whatever the Host header names.
  const hostsFor = (host: string | undefined) => state.allowedHosts ?? new Set([(host ?? "").toLowerCase(), hostWithPort((host ?? "").toLowerCase())]);
  app.use("*", cors.middleware((host) => hostAllowed(host, hostsFor(host))));

  app.use("*", async (c, next) => {
    const hosts = hostsFor(c.req.header("host"));
    if (!hostAllowed(c.req.header("host"), hosts)) return apiError(c, "FORBIDDEN", "Host header does not name this server");
    const origin = c.req.header("origin");
    if (!originAllowed(origin, hosts) && !cors.allows(origin)) return apiError(c, "FORBIDDEN", "cross-origin requests are not allowed");
    return next();
  });
  app.use("*", accessControl(state, (path, method) => PUBLIC_PATHS.has(path) || isInboundWebhookRequest(method, path)));

  app.use(
    "*",
    bodyLimit({
      maxSize: runtime.config.settings.limits.maxBodyBytes,
      onError: (c) => apiError(c, "PAYLOAD_TOO_LARGE", `request body exceeds ${runtime.config.settings.limits.maxBodyBytes} bytes`),
    }),
  );

  app.get("/health", async (c) => c.json({ ok: true, version: VERSION, sandbox: await sandboxStatus({ runtime: runtime.resources, settings: runtime.config.settings, log: runtime.log }) }));
  eventRoutes(app, state);

  agentRoutes(app, state);
  sessionRoutes(app, state);
  for (const register of modules) register(app, state);
  answerHeadWithGet(app);
  return app;
}

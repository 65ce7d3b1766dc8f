import type { MiddlewareHandler } from "hono";
import { VeilError } from "../errors.js";
import type { AppEnv } from "./context.js";
import { apiError } from "./errors.js";

/** What a cross-origin UI may send: the bearer secret, JSON bodies, and SSE's reconnect header. */
const ALLOWED_HEADERS = "authorization, content-type, last-event-id, accept";
const ALLOWED_METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE";
/** Seconds a browser may cache a preflight answer. */
const PREFLIGHT_MAX_AGE = 600;

export interface CorsPolicy {
  /** True for an Origin listed in `server.allowedOrigins`. */
  allows(origin: string | undefined): boolean;
  /** Answers preflights and adds CORS headers for listed origins; mount before the origin check. */
  middleware(hostAllowed: (host: string | undefined) => boolean): MiddlewareHandler<AppEnv>;
}

/**
 * `server.allowedOrigins: ["https://ui.example"]` (default none) lets a UI on another origin
 * call the API: preflights are answered (authorization and content-type allowed) and
 * answers carry `Access-Control-Allow-Origin`. Credentials stay the bearer token (no
 * cookies); every other foreign Origin still gets 403, and Host must still name this
 * server (DNS-rebinding guard), preflights included.
 */
export function corsPolicy(settings: { readonly [key: string]: unknown }): CorsPolicy {
  const allowed = new Set(readAllowedOrigins(settings.server));
  const allows = (origin: string | undefined) => origin !== undefined && allowed.has(origin.toLowerCase());
  return {
    allows,
    middleware: (hostAllowed) => async (c, next) => {
      const origin = c.req.header("origin");
      if (!allows(origin)) return next();
      if (c.req.method === "OPTIONS" && c.req.header("access-control-request-method")) {
        if (!hostAllowed(c.req.header("host"))) return apiError(c, "FORBIDDEN", "Host header does not name this server");
        return c.body(null, 204, {
          "access-control-allow-origin": origin!,
          "access-control-allow-methods": ALLOWED_METHODS,
          "access-control-allow-headers": ALLOWED_HEADERS,
          "access-control-max-age": String(PREFLIGHT_MAX_AGE),
          vary: "Origin",
        });
      }
      await next();
      c.res.headers.set("access-control-allow-origin", origin!);
      c.res.headers.append("vary", "Origin");
    },
  };
}

/** The listed origins, each normalised to `scheme://host[:port]`; CONFIG_ERROR names a bad entry. */
function readAllowedOrigins(server: unknown): string[] {
  if (server === undefined) return [];
  const list = (server as { allowedOrigins?: unknown } | null)?.allowedOrigins;
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new VeilError("CONFIG_ERROR", "settings server.allowedOrigins must be a list of origins such as \"https://ui.example\"");
  return list.map((entry, index) => {
    const where = `settings server.allowedOrigins[${index}]`;
    if (typeof entry !== "string") throw new VeilError("CONFIG_ERROR", `${where} must be a string such as "https://ui.example"`);
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw new VeilError("CONFIG_ERROR", `${where} ${JSON.stringify(entry)} is not an origin such as "https://ui.example"`);
    }
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.origin !== entry.replace(/\/$/, "").toLowerCase()) {
      throw new VeilError("CONFIG_ERROR", `${where} ${JSON.stringify(entry)} must be a bare origin (scheme://host[:port], no path)`);
    }
    return url.origin;
  });
}

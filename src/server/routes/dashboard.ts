import type { Context, Hono } from "hono";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { PACKAGE_ROOT } from "../../version.js";
import { apiError } from "../errors.js";
import type { AppEnv, ServerState } from "../context.js";

/** URL path → file in dist/dashboard (built by dashboard/build.mjs) and its type. */
const ASSETS: Record<string, { file: string; type: string }> = {
  "/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/dashboard/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/dashboard/app.css": { file: "app.css", type: "text/css; charset=utf-8" },
  "/dashboard/favicon.svg": { file: "favicon.svg", type: "image/svg+xml" },
};

/** Paths the dashboard loads before it has the secret (server/app.ts lets them through unauthenticated). */
export const DASHBOARD_PATHS: readonly string[] = Object.keys(ASSETS);

/**
 * The page runs only our own bundle and talks only to this server: model output that
 * slipped past the renderer still could not load or run anything.
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface LoadedAsset {
  body: Uint8Array<ArrayBuffer>;
  gzip: Uint8Array<ArrayBuffer>;
  etag: string;
  type: string;
}

/** `GET /` and its assets: static files shipped in the package, read and gzipped once on first request. */
export function dashboardRoutes(app: Hono<AppEnv>, _state: ServerState): void {
  const folder = locateDashboard();
  const cache = new Map<string, LoadedAsset>();
  const load = (path: string): LoadedAsset | undefined => {
    const cached = cache.get(path);
    if (cached) return cached;
    const asset = ASSETS[path]!;
    const file = folder && join(folder, asset.file);
    if (!file || !existsSync(file)) return undefined;
    const body = new Uint8Array(readFileSync(file));
    const loaded = { body, gzip: new Uint8Array(gzipSync(body, { level: 9 })), etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`, type: asset.type };
    cache.set(path, loaded);
    return loaded;
  };
  const serve = (c: Context<AppEnv>) => {
    const asset = load(c.req.path);
    if (!asset) return apiError(c, "NOT_FOUND", "the dashboard is not built: run `npm run build`");
    const headers: Record<string, string> = {
      "content-type": asset.type,
      etag: asset.etag,
      "cache-control": "no-cache",
      vary: "accept-encoding",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    };
    if (asset.type.startsWith("text/html")) headers["content-security-policy"] = CONTENT_SECURITY_POLICY;
    if (c.req.header("if-none-match") === asset.etag) return c.body(null, 304, headers);
    const gzip = /\bgzip\b/.test(c.req.header("accept-encoding") ?? "");
    if (gzip) headers["content-encoding"] = "gzip";
    return c.body(gzip ? asset.gzip : asset.body, 200, headers);
  };
  for (const path of DASHBOARD_PATHS) app.get(path, serve);
}

/** dist/dashboard of this package. */
function locateDashboard(): string | undefined {
  return PACKAGE_ROOT ? join(PACKAGE_ROOT, "dist", "dashboard") : undefined;
}

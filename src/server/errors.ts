import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ERROR_STATUS, VeilError, type ErrorCode } from "../errors.js";
import type { Logger } from "../tools/types.js";

/** VeilError → `{ error: { code, message } }` with its status; anything else → 500 INTERNAL_ERROR. */
export function errorResponse(c: Context, error: unknown, log?: Logger): Response {
  if (error instanceof VeilError) {
    return c.json({ error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) } }, error.status as ContentfulStatusCode);
  }
  log?.error("unhandled request error", { error: String(error), stack: (error as Error)?.stack, path: c.req.path });
  return c.json({ error: { code: "INTERNAL_ERROR", message: "internal error" } }, 500);
}

export function apiError(c: Context, code: ErrorCode, message: string): Response {
  return c.json({ error: { code, message } }, (ERROR_STATUS[code] ?? 500) as ContentfulStatusCode);
}

/**
 * The one catalogue of error codes and the one table of their HTTP statuses: every answer
 * of the server takes its status from here (one status per code). Tools render a code as
 * the `Error: CODE — message` string tools answer with (see tools/format.ts).
 */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  INVALID_JSON: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  SESSION_NOT_FOUND: 404,
  AGENT_NOT_FOUND: 404,
  TOOL_NOT_FOUND: 404,
  MODEL_NOT_FOUND: 404,
  FILE_NOT_FOUND: 404,
  METHOD_NOT_FOUND: 404,
  SKILL_NOT_FOUND: 404,
  SCHEDULE_NOT_FOUND: 404,
  /** POST /webhooks/<name> for a name settings.webhooks.in does not define. */
  WEBHOOK_NOT_FOUND: 404,
  /** An API key id that does not exist (GET/DELETE /keys/:id). */
  KEY_NOT_FOUND: 404,
  not_found: 409,
  SESSION_CLOSED: 409,
  SESSION_SUSPENDED: 409,
  SESSION_BUSY: 409,
  CONFLICT: 409,
  /** A node wrote for a session whose lease another node has taken over (fencing). */
  LEASE_LOST: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** The prompt stays over the model's context window even after compaction. */
  CONTEXT_OVERFLOW: 400,
  HOOK_BLOCKED: 400,
  /** A budget (cost, key spend) is used up: 402 over HTTP, whatever the budget. */
  BUDGET_EXCEEDED: 402,
  /** A key's requestsPerMinute is used up; Retry-After says when the next window opens. */
  RATE_LIMITED: 429,
  /** The live-session cap (limits.maxLiveSessions) is reached: close sessions first. */
  TOO_MANY_SESSIONS: 429,
  /** Something the request needs is not installed or configured (no model, a provider's key unset): the message says what to set. */
  CONFIG_ERROR: 400,
  INTERNAL_ERROR: 500,
  LLM_ERROR: 502,
  PROVIDER_ERROR: 502,
  /** The turn's final answer was not JSON valid against the chat's output_schema, after the repair requests. */
  OUTPUT_SCHEMA_MISMATCH: 502,
  /** The database behind the store cannot be reached (down, refusing, cut mid-query). */
  STORE_UNAVAILABLE: 503,
  TIMEOUT: 504,
  /** VEIL_REPLAY: a model request is not the one the recording holds (the message names the first difference). */
  REPLAY_MISMATCH: 502,
  /** The turn was cancelled (POST /cancel, a closing session, a shutdown) before it answered. */
  CANCELLED: 409,
  // `veil serve` could not bind (printed by the CLI; never an HTTP answer).
  PORT_IN_USE: 500,
  PORT_NOT_PERMITTED: 500,
  // Tool-level codes (rendered to the model; HTTP rarely sees them).
  TOOL_ERROR: 500,
  TOOL_TIMEOUT: 504,
  TOOL_CONTEXT_INVALID: 500,
  BROKEN_SYMLINK: 400,
  PATH_OUTSIDE_WORKSPACE: 403,
  PATH_PROTECTED: 403,
  NOT_A_FILE: 400,
  NOT_A_DIRECTORY: 400,
  IS_A_DIRECTORY: 400,
  FILE_NOT_READ: 409,
  FILE_CHANGED: 409,
  FILE_TOO_LARGE: 413,
  MATCH_NOT_FOUND: 400,
  MATCH_NOT_UNIQUE: 400,
  SHELL_NOT_FOUND: 404,
  FETCH_ERROR: 502,
  FETCH_BLOCKED: 403,
  SEARCH_ERROR: 502,
  /** sandbox.mode "required" and no working sandbox: the bash or custom-tool call ran nothing. */
  SANDBOX_UNAVAILABLE: 503,
  /** A tool call that needed approval was denied (by a person, a timeout or a cancel). */
  DENIED: 403,
  OUTPUT_TRUNCATED: 400,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface VeilErrorOptions {
  details?: Record<string, unknown>;
  cause?: unknown;
}

export class VeilError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options: VeilErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "VeilError";
    this.code = code;
    this.status = statusOf(code);
    this.details = options.details;
  }
}

/** An error a tool answers the model with; rendered as `Error: CODE — message`. */
export class ToolError extends VeilError {
  constructor(code: ErrorCode, message: string, options: VeilErrorOptions = {}) {
    super(code, message, options);
    this.name = "ToolError";
  }
}

/** The HTTP status of a code (a run result's code is a plain string); 500 for a code not in the catalogue. */
export function statusOf(code: string): number {
  return Object.hasOwn(ERROR_STATUS, code) ? ERROR_STATUS[code as ErrorCode] : 500;
}

export function isVeilError(value: unknown): value is VeilError {
  return value instanceof VeilError;
}

export function errorMessage(value: unknown): string {
  if (value instanceof Error) return value.message;
  return typeof value === "string" ? value : JSON.stringify(value);
}

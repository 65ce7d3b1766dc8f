/**
 * The one catalogue of error codes. HTTP maps a code to its status; tools render
 * a code as the `Error: CODE — message` string tools answer with (see tools/format.ts).
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
  BUDGET_EXCEEDED: 429,
  RATE_LIMITED: 429,
  CONFIG_ERROR: 500,
  INTERNAL_ERROR: 500,
  LLM_ERROR: 502,
  PROVIDER_ERROR: 502,
  /** The database behind the store cannot be reached (down, refusing, cut mid-query). */
  STORE_UNAVAILABLE: 503,
  TIMEOUT: 504,
  CANCELLED: 499,
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
  OUTPUT_TRUNCATED: 400,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface VeilErrorOptions {
  details?: Record<string, unknown>;
  cause?: unknown;
  status?: number;
}

export class VeilError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options: VeilErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "VeilError";
    this.code = code;
    this.status = options.status ?? ERROR_STATUS[code] ?? 500;
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

export function isVeilError(value: unknown): value is VeilError {
  return value instanceof VeilError;
}

export function errorMessage(value: unknown): string {
  if (value instanceof Error) return value.message;
  return typeof value === "string" ? value : JSON.stringify(value);
}

import type { ErrorCode } from "../errors.js";
import type { LlmError } from "./types.js";

/** The provider's own refusals, named for retries and fallbacks (its 429, 400, 404). */
const PROVIDER_REFUSALS = new Set<string>(["RATE_LIMITED", "VALIDATION_ERROR", "MODEL_NOT_FOUND"]);

/**
 * What a caller of Veil is told of a failed model call. A provider's refusal is a provider
 * failure to Veil's client: LLM_ERROR (502), its message naming the provider and its status,
 * never the client's own RATE_LIMITED, VALIDATION_ERROR or MODEL_NOT_FOUND (which would tell
 * the client that its own request or rate was at fault). Every other code is kept: a timeout,
 * a cancel, Veil's own configuration (CONFIG_ERROR), an overflow compaction could not fix.
 */
export function reportedError(error: Pick<LlmError, "code" | "message" | "status">): { code: ErrorCode; message: string; details?: { providerStatus: number } } {
  const code = (PROVIDER_REFUSALS.has(error.code) ? "LLM_ERROR" : error.code) as ErrorCode;
  return { code, message: error.message, ...(error.status !== undefined ? { details: { providerStatus: error.status } } : {}) };
}

import type { LlmError } from "../types.js";

/**
 * Retry-After → ms. Accepts delta-seconds ("1", "1.5") or an HTTP date. `retry-after-ms`
 * (sent by OpenAI) wins when present. Undefined when absent or unparseable.
 */
export function parseRetryAfter(response: { header(name: string): string | null }, now: number): number | undefined {
  const ms = response.header("retry-after-ms");
  if (ms !== null && ms.trim() !== "" && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const value = response.header("retry-after");
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, Math.round(seconds * 1000));
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** The provider's own message out of an error body (JSON `error.message`, `message`, or text). */
export function providerMessage(bodyText: string): string {
  const trimmed = bodyText.trim();
  if (!trimmed) return "";
  try {
    const body = JSON.parse(trimmed) as Record<string, any>;
    const error = body.error ?? body;
    if (typeof error === "string") return error;
    if (typeof error?.message === "string") {
      const raw = error.metadata?.raw;
      return typeof raw === "string" && raw && !error.message.includes(raw) ? `${error.message}: ${raw.slice(0, 300)}` : error.message;
    }
    if (typeof body.detail === "string") return body.detail;
  } catch {
    // not JSON: fall through to the text
  }
  return trimmed.length > 500 ? `${trimmed.slice(0, 500)}…` : trimmed;
}

/** An HTTP error status → LlmError. */
export function httpError(provider: string, model: string, status: number, bodyText: string, retryAfterMs: number | undefined): LlmError {
  const detail = providerMessage(bodyText);
  const message = `${provider}: HTTP ${status} for model "${model}"${detail ? `: ${detail}` : ""}`;
  const base = { message, status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  if (status === 429) return { code: "RATE_LIMITED", retryable: true, ...base };
  if (status === 408) return { code: "TIMEOUT", retryable: true, ...base };
  if (status >= 500) return { code: "PROVIDER_ERROR", retryable: true, ...base };
  // The provider refused Veil's key: a provider failure, never the client's own UNAUTHORIZED.
  if (status === 401 || status === 403) return { code: "LLM_ERROR", retryable: false, ...base, message: `${message} (the provider refused the key: check "apiKey" / "apiKeyEnv" of provider "${provider}")` };
  if (status === 404) return { code: "MODEL_NOT_FOUND", retryable: false, ...base };
  if (status === 400 || status === 413 || status === 422) return { code: "VALIDATION_ERROR", retryable: false, ...base };
  if (status === 409) return { code: "PROVIDER_ERROR", retryable: true, ...base };
  return { code: "LLM_ERROR", retryable: false, ...base };
}

/** An `{"error": …}` object sent inside a 200 stream or body (OpenRouter does this). */
export function inStreamError(provider: string, model: string, error: unknown, produced: boolean): LlmError {
  const e = (error ?? {}) as Record<string, any>;
  const status = typeof e.code === "number" ? e.code : typeof e.status === "number" ? e.status : undefined;
  const text = typeof e.message === "string" ? e.message : typeof error === "string" ? error : JSON.stringify(error);
  if (status !== undefined && status >= 400) {
    const mapped = httpError(provider, model, status, JSON.stringify({ error: { message: text } }), undefined);
    return { ...mapped, retryable: mapped.retryable && !produced };
  }
  return { code: "PROVIDER_ERROR", message: `${provider}: error from model "${model}": ${text}`, retryable: !produced };
}

/** A thrown fetch/body-read failure (not abort, not timeout) → LlmError. */
export function networkError(provider: string, model: string, error: unknown, produced: boolean): LlmError {
  const failure = error as { code?: string; message?: string; cause?: { code?: string; message?: string } } | undefined;
  const source = failure?.cause ?? failure;
  const reason = source?.code ?? source?.message ?? String(error);
  const what = produced ? "connection lost mid-stream" : "connection failed";
  return { code: "PROVIDER_ERROR", message: `${provider}: ${what} for model "${model}" (${reason})`, retryable: !produced };
}

/** How much of an unreadable data line an error quotes. */
const QUOTED_CHUNK_CHARS = 120;

/**
 * A data line of a 200 stream that is not a JSON chunk. A provider failure like a reset:
 * retried while nothing has streamed, and reported as LLM_ERROR naming the provider.
 */
export function unreadableChunk(provider: string, model: string, data: string, produced: boolean): LlmError {
  const quoted = data.length > QUOTED_CHUNK_CHARS ? `${data.slice(0, QUOTED_CHUNK_CHARS)}…` : data;
  return { code: "LLM_ERROR", message: `${provider}: unreadable stream from model "${model}": a data line is not a JSON chunk: ${quoted}`, retryable: !produced };
}

/** A 200 stream that ended (with [DONE] or without) before any chunk: nothing to answer with, like a garbled one. */
export function emptyStream(provider: string, model: string): LlmError {
  return { code: "LLM_ERROR", message: `${provider}: empty stream from model "${model}": it ended before any chunk`, retryable: true };
}

import type { ProviderConfig, ReasoningConfig } from "../config/types.js";
import type { TokenUsage } from "../store/store.js";

/** Engine-neutral message and stream shapes. Wire formats map to and from these. */

export type ContentPart =
  | { type: "text"; text: string }
  /** data is base64 without a data: prefix, or url is a fetchable/data URL. */
  | { type: "image"; mediaType: string; data?: string; url?: string }
  | { type: "audio"; mediaType: string; data: string };

export interface ToolCallRequest {
  id: string;
  name: string;
  /** Raw JSON text, possibly malformed: the loop validates it. */
  arguments: string;
}

export type LlmMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | ContentPart[] }
  | { role: "assistant"; content: string | null; thinking?: string | null; toolCalls?: ToolCallRequest[] }
  | { role: "tool"; toolCallId: string; content: string | ContentPart[] };

export interface LlmToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

export type FinishReason = "stop" | "tool_calls" | "length" | "content_filter" | "error" | "cancelled" | (string & {});

export interface AssistantMessage {
  content: string | null;
  thinking: string | null;
  toolCalls: ToolCallRequest[];
}

export interface LlmError {
  /**
   * How the call failed, for retries and fallbacks: the provider's own answers (RATE_LIMITED
   * for its 429, VALIDATION_ERROR for its 400, MODEL_NOT_FOUND for its 404…) are not Veil's
   * answers to a client; reportedError() says what a caller is told.
   */
  code: "LLM_ERROR" | "TIMEOUT" | "CANCELLED" | "RATE_LIMITED" | "PROVIDER_ERROR" | "MODEL_NOT_FOUND" | "VALIDATION_ERROR" | "CONFIG_ERROR" | "REPLAY_MISMATCH";
  message: string;
  /** HTTP status when the provider answered with one. */
  status?: number;
  /** Worth retrying the same model (429, 5xx, timeouts, resets before output). */
  retryable: boolean;
  /** From Retry-After, when given. */
  retryAfterMs?: number;
}

/** A provider stream always ends with exactly one `done` or `error` and never throws. */
export type StreamEvent =
  | { type: "start"; model: string }
  | { type: "text"; delta: string }
  | { type: "thinking"; delta: string }
  /** The model committed to a tool name (arguments still streaming). */
  | { type: "tool_call_start"; index: number; id: string; name: string }
  | { type: "tool_call_delta"; index: number; argumentsDelta: string }
  | { type: "done"; message: AssistantMessage; finishReason: FinishReason; usage: TokenUsage; model: string }
  | { type: "error"; error: LlmError; partial: AssistantMessage; usage: TokenUsage; model: string };

export interface LlmRequest {
  /** Provider-side model id (after key resolution). */
  model: string;
  messages: LlmMessage[];
  tools?: LlmToolSpec[];
  reasoning?: ReasoningConfig | null;
  maxTokens?: number;
  temperature?: number;
  signal?: AbortSignal;
  /**
   * The turn's output schema: its final answer must be JSON valid against it. Whether the call
   * carries it as `response_format` is the provider's `structuredOutput` setting; `repair` marks
   * a call that asks again for an answer that did not match.
   */
  outputSchema?: { name: string; schema: Record<string, unknown>; repair: boolean };
  /**
   * A client's own chat-completions body (the completions proxy): sent to the provider as it
   * is, but for `model`, which becomes the provider's model id. The fields above then only
   * describe the call to Veil (they are not sent a second time).
   */
  wireBody?: Readonly<Record<string, unknown>>;
  /**
   * A provider that can tell when its request went out calls `onSending` as it starts sending
   * and `onSent` once the request has been handed to the network: work meant to overlap the
   * model's time to answer starts then, off the request's own path.
   */
  onSending?: () => void;
  onSent?: () => void;
}

/** One provider endpoint. */
export interface LlmProvider {
  readonly name: string;
  stream(request: LlmRequest): AsyncIterable<StreamEvent>;
}

export interface ResolvedModel {
  /** The key as configured ("local/qwen3:8b"). */
  key: string;
  providerName: string;
  provider: ProviderConfig;
  /** Model id sent on the wire ("qwen3:8b"). */
  modelId: string;
}

/**
 * What the loop talks to: a model key in, one stream out, with retries and the
 * fallback chain handled inside. Tests may pass any implementation.
 */
export interface LlmClient {
  stream(request: Omit<LlmRequest, "model"> & { modelKey: string }): AsyncIterable<StreamEvent>;
  /** Throws CONFIG_ERROR naming what is missing when the key cannot be sent (no provider for it, the provider's key unset). */
  checkReady?(modelKey: string): void;
}

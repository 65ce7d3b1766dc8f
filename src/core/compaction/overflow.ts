import { VeilError } from "../../errors.js";

/**
 * How providers say the prompt is longer than the model's window. Collected from their
 * answers as users reported them:
 * - OpenAI: 400, code `context_length_exceeded`, "This model's maximum context length is 128000
 *   tokens. However, your messages resulted in 130456 tokens…"; newer: "Your input exceeds the
 *   context window of this model."
 * - OpenRouter: "This endpoint's maximum context length is 200000 tokens. However, you requested
 *   about 5028244 tokens (…)"; some routes pass the OpenAI text through.
 * - Anthropic (also via its OpenAI-compatible endpoint): "prompt is too long: 208656 tokens >
 *   200000 maximum".
 * - vLLM: "This model's maximum context length is 16384 tokens. However, you requested 122946
 *   tokens (…)"; "The decoder prompt (length 10127) is longer than the maximum model length of 8192".
 * - llama.cpp server: "the request exceeds the available context size. try increasing the context
 *   size or enable context shift" (type `exceed_context_size_error`, sometimes as a 500), newer
 *   "request (4390 tokens) exceeds the available context size (4096 tokens), try increasing it",
 *   and "Context size has been exceeded."
 * - Ollama: truncates silently by default; with truncation off, "input length exceeds the context
 *   length" / "the input length exceeds the context length".
 * - LM Studio: "Trying to keep the first 15857 tokens when context the overflows. However, the model
 *   is loaded with context length of only 8192 tokens…", "Reached context length of 4096 tokens…",
 *   MLX: "Context size has been exceeded."
 * - Others seen behind OpenAI-compatible gateways: Google "The input token count (1196265) exceeds
 *   the maximum number of tokens allowed (1048575)", xAI "maximum prompt length is 131072",
 *   Groq/Mistral "Please reduce the length of the messages", Bedrock "input is too long for
 *   requested model", "length of prompt_tokens (163280) must be less than max_seq_len (32768)".
 */
const OVERFLOW_PATTERNS: readonly RegExp[] = [
  /context[_ ]length[_ ]exceeded/i,
  /exceed_context_size_error/i,
  /maximum context length/i,
  /prompt is too long/i,
  /exceeds? the (?:available )?context (?:size|window|length)/i,
  /context (?:size|window) (?:has been )?exceeded/i,
  /input (?:length )?exceeds (?:the )?(?:maximum )?context length/i,
  /(?:input|prompt) is too long/i,
  /is longer than the maximum model length/i,
  /when context the overflows/i,
  /reached context length of \d+/i,
  /input token count.*exceeds the maximum/i,
  /maximum prompt length is \d+/i,
  /reduce the length of the messages/i,
  /prompt_tokens.*must be less than max_seq_len/i,
  /too many (?:input |prompt )?tokens/i,
];

/** Anything carrying a provider's error: an LlmError, an Error, a string. */
export type ErrorLike = { message?: unknown; code?: unknown; status?: unknown } | string | null | undefined;

/** True when a provider's answer says the prompt does not fit the context window. */
export function isOverflowError(error: ErrorLike | unknown): boolean {
  if (error === null || error === undefined) return false;
  const e = error as { message?: unknown; code?: unknown; status?: unknown };
  if (e.status === 429) return false;
  const text = typeof error === "string" ? error : `${typeof e.code === "string" ? e.code : ""} ${typeof e.message === "string" ? e.message : ""}`;
  // An output-token limit ("max_tokens: 10000 > 4096 … output tokens") is a different mistake.
  if (/output tokens/i.test(text) && !/context|prompt is too long/i.test(text)) return false;
  // So is a per-minute token quota ("Request too large … tokens per min (TPM)").
  if (/per min|rate limit|\bTPM\b/i.test(text)) return false;
  return OVERFLOW_PATTERNS.some((pattern) => pattern.test(text));
}

/**
 * The sizes a provider named, when it named them: `prompt` tokens sent, `limit` of the window.
 * Recognises "maximum context length is L … resulted in / requested (about) P", "P tokens > L
 * maximum", "request (P tokens) exceeds the available context size (L tokens)", "first P tokens …
 * context length of only L", and llama.cpp's `n_prompt_tokens` / `n_ctx` fields in the text.
 */
export function overflowSizes(message: string): { prompt?: number; limit?: number } {
  const n = (s: string | undefined) => (s === undefined ? undefined : Number(s.replace(/,/g, "")));
  let m = /maximum context length is ([\d,]+)[\s\S]*?(?:resulted in|requested(?: about)?) ([\d,]+)/i.exec(message);
  if (m) return { limit: n(m[1]), prompt: n(m[2]) };
  m = /([\d,]+) tokens > ([\d,]+) maximum/i.exec(message);
  if (m) return { prompt: n(m[1]), limit: n(m[2]) };
  m = /\(([\d,]+) tokens\) exceeds the available context size \(([\d,]+) tokens\)/i.exec(message);
  if (m) return { prompt: n(m[1]), limit: n(m[2]) };
  m = /first ([\d,]+) tokens[\s\S]*?context length of only ([\d,]+)/i.exec(message);
  if (m) return { prompt: n(m[1]), limit: n(m[2]) };
  const prompt = /n_prompt_tokens"?\s*[:=]\s*(\d+)/i.exec(message)?.[1];
  const limit = /n_ctx"?\s*[:=]\s*(\d+)/i.exec(message)?.[1];
  return { ...(prompt ? { prompt: Number(prompt) } : {}), ...(limit ? { limit: Number(limit) } : {}) };
}

/**
 * The turn's failure once compaction and one retry did not make the prompt fit: names the
 * model, its window and the size (the provider's figure when it gave one, our estimate else).
 */
export function contextOverflowError(options: { modelKey: string; contextWindow: number; promptTokens: number; providerMessage?: string }): VeilError {
  const sizes = options.providerMessage ? overflowSizes(options.providerMessage) : {};
  const window = sizes.limit ?? options.contextWindow;
  const size = sizes.prompt ?? options.promptTokens;
  const source = sizes.prompt !== undefined ? "as the provider counts it" : "estimated";
  return new VeilError(
    "CONTEXT_OVERFLOW",
    `The conversation no longer fits the context window of ${options.modelKey} (${window} tokens): the prompt is ${size} tokens (${source}) even after compaction. ` +
      "Raise context_window in models.json if the model allows more, lower defaultCompaction.keepRecentTokens, or start a new session.",
    { details: { contextWindow: window, promptTokens: size, ...(options.providerMessage ? { providerMessage: options.providerMessage } : {}) } },
  );
}

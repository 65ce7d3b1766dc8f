import { describe, expect, it } from "vitest";
import { contextOverflowError, isOverflowError, overflowSizes } from "../../../src/core/compaction/index.js";
import { httpError } from "../../../src/llm/openai-compatible/errors.js";

/** Provider answers as users reported them (see the list in overflow.ts). */
const OVERFLOWS: [string, string][] = [
  ["OpenAI", "This model's maximum context length is 128000 tokens. However, your messages resulted in 130456 tokens. Please reduce the length of the messages."],
  ["OpenAI (newer)", "Your input exceeds the context window of this model. Please adjust your input and try again."],
  ["OpenAI code only", "context_length_exceeded"],
  ["OpenRouter", "This endpoint's maximum context length is 200000 tokens. However, you requested about 5028244 tokens (4945291 of text input, 2953 of tool input, 80000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically."],
  ["Anthropic", "prompt is too long: 208656 tokens > 200000 maximum"],
  ["vLLM", "This model's maximum context length is 16384 tokens. However, you requested 122946 tokens (112946 in the messages, 10000 in the completion). Please reduce the length of the messages or completion."],
  ["vLLM (multimodal)", "The decoder prompt (length 10127) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens."],
  ["llama.cpp", "the request exceeds the available context size. try increasing the context size or enable context shift"],
  ["llama.cpp (newer)", "request (4390 tokens) exceeds the available context size (4096 tokens), try increasing it"],
  ["llama.cpp (500)", "Context size has been exceeded."],
  ["Ollama", "input length exceeds the context length"],
  ["Ollama (embed)", "the input length exceeds the context length"],
  ["LM Studio", "Trying to keep the first 15857 tokens when context the overflows. However, the model is loaded with context length of only 8192 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input."],
  ["LM Studio (mid-generation)", "Reached context length of 4096 tokens with model (arch: qwen3vlmoe) that does not currently support mid-generation context overflow."],
  ["Google", "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)."],
  ["xAI", "This model's maximum prompt length is 131072 but the request contains 537812 tokens."],
  ["Bedrock", "Input is too long for requested model."],
  ["gateway", "length of prompt_tokens (163280) must be less than max_seq_len (32768)."],
];

describe("isOverflowError", () => {
  it.each(OVERFLOWS)("recognises %s", (_, message) => {
    expect(isOverflowError(message)).toBe(true);
    expect(isOverflowError(new Error(message))).toBe(true);
    expect(isOverflowError(httpError("p", "m", 400, JSON.stringify({ error: { message, type: "invalid_request_error" } }), undefined))).toBe(true);
  });

  it("recognises a code-only answer on an LlmError-like value", () => {
    expect(isOverflowError({ code: "context_length_exceeded", message: "Bad request" })).toBe(true);
  });

  it.each([
    ["output-token limit", "max_tokens: 10000 > 4096, which is the maximum allowed number of output tokens for claude-3-5-sonnet-20240620"],
    ["per-minute quota", "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 45000."],
    ["rate limit", "Rate limit reached: too many tokens, retry in 20s"],
    ["schema", "Invalid schema for function 'read_file': 'file' is not valid"],
    ["network", "fake: connection failed for model \"m\" (ECONNREFUSED)"],
    ["auth", "Incorrect API key provided"],
  ])("does not mistake a %s error for an overflow", (_, message) => {
    expect(isOverflowError(message)).toBe(false);
  });

  it("does not treat a 429 as an overflow, nor nothing at all", () => {
    expect(isOverflowError({ status: 429, message: "maximum context length is 10 tokens" })).toBe(false);
    expect(isOverflowError(null)).toBe(false);
    expect(isOverflowError(undefined)).toBe(false);
    expect(isOverflowError({})).toBe(false);
  });
});

describe("overflowSizes and the CONTEXT_OVERFLOW error", () => {
  it("reads the prompt size and the window where the provider names them", () => {
    expect(overflowSizes(OVERFLOWS[0]![1])).toEqual({ limit: 128000, prompt: 130456 });
    expect(overflowSizes(OVERFLOWS[3]![1])).toEqual({ limit: 200000, prompt: 5028244 });
    expect(overflowSizes(OVERFLOWS[4]![1])).toEqual({ prompt: 208656, limit: 200000 });
    expect(overflowSizes(OVERFLOWS[8]![1])).toEqual({ prompt: 4390, limit: 4096 });
    expect(overflowSizes(OVERFLOWS[12]![1])).toEqual({ prompt: 15857, limit: 8192 });
    expect(overflowSizes('{"n_prompt_tokens":14429,"n_ctx":8192}')).toEqual({ prompt: 14429, limit: 8192 });
    expect(overflowSizes("Context size has been exceeded.")).toEqual({});
  });

  it("names the model, the window and the size, preferring the provider's figures", () => {
    const fromProvider = contextOverflowError({ modelKey: "local/qwen3", contextWindow: 16000, promptTokens: 15000, providerMessage: OVERFLOWS[4]![1] });
    expect(fromProvider.code).toBe("CONTEXT_OVERFLOW");
    expect(fromProvider.status).toBe(400);
    expect(fromProvider.message).toMatch(/local\/qwen3 \(200000 tokens\): the prompt is 208656 tokens \(as the provider counts it\)/);
    const estimated = contextOverflowError({ modelKey: "m", contextWindow: 16000, promptTokens: 17500 });
    expect(estimated.message).toMatch(/m \(16000 tokens\): the prompt is 17500 tokens \(estimated\) even after compaction/);
    expect(estimated.details).toEqual({ contextWindow: 16000, promptTokens: 17500 });
  });
});

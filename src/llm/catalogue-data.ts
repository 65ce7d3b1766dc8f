/**
 * The models Veil knows without a models.json: context window, most output tokens per answer,
 * input modalities and (for models one vendor sells at one price) prices in USD per million
 * tokens. Keyed by OpenRouter's id (`id`) and the vendor API's own names (`aliases`).
 *
 * Where the figures come from: each entry's `source`, the vendor's model or pricing page (for
 * open-weight models, the model card). Open-weight models (Llama, Qwen, DeepSeek, gpt-oss)
 * carry no price: each host sets its own. Tiered prices (Gemini above 200k prompt tokens) are
 * the lowest tier. Reviewed 2026-12-01; models newer than that need a models.json entry.
 *
 * How it is updated: `scripts/update-model-catalogue.mjs` compares these entries with a saved
 * copy of OpenRouter's public model list (`curl -s https://openrouter.ai/api/v1/models`) and,
 * with --write, rewrites the block between the markers below. Nothing is fetched at install,
 * build, test or run time. test/llm/catalogue.test.ts checks that every entry is well-formed.
 */
import type { CatalogueEntry } from "./catalogue.js";

export const CATALOGUE_REVIEWED = "2026-12-01";

export const CATALOGUE: readonly CatalogueEntry[] =
/* catalogue:begin */
[
  { "id": "openai/gpt-4o", "aliases": ["gpt-4o", "gpt-4o-2024-08-06", "gpt-4o-2024-11-20"], "context_window": 128000, "max_output_tokens": 16384, "input_modalities": ["text", "image"], "cost": { "input": 2.5, "output": 10, "cache_read": 1.25 }, "source": "https://platform.openai.com/docs/models/gpt-4o" },
  { "id": "openai/gpt-4o-mini", "aliases": ["gpt-4o-mini", "gpt-4o-mini-2024-07-18"], "context_window": 128000, "max_output_tokens": 16384, "input_modalities": ["text", "image"], "cost": { "input": 0.15, "output": 0.6, "cache_read": 0.075 }, "source": "https://platform.openai.com/docs/models/gpt-4o-mini" },
  { "id": "openai/gpt-4.1", "aliases": ["gpt-4.1", "gpt-4.1-2025-04-14"], "context_window": 1047576, "max_output_tokens": 32768, "input_modalities": ["text", "image"], "cost": { "input": 2, "output": 8, "cache_read": 0.5 }, "source": "https://platform.openai.com/docs/models/gpt-4.1" },
  { "id": "openai/gpt-4.1-mini", "aliases": ["gpt-4.1-mini", "gpt-4.1-mini-2025-04-14"], "context_window": 1047576, "max_output_tokens": 32768, "input_modalities": ["text", "image"], "cost": { "input": 0.4, "output": 1.6, "cache_read": 0.1 }, "source": "https://platform.openai.com/docs/models/gpt-4.1-mini" },
  { "id": "openai/gpt-4.1-nano", "aliases": ["gpt-4.1-nano", "gpt-4.1-nano-2025-04-14"], "context_window": 1047576, "max_output_tokens": 32768, "input_modalities": ["text", "image"], "cost": { "input": 0.1, "output": 0.4, "cache_read": 0.025 }, "source": "https://platform.openai.com/docs/models/gpt-4.1-nano" },
  { "id": "openai/o3", "aliases": ["o3", "o3-2025-04-16"], "context_window": 200000, "max_output_tokens": 100000, "input_modalities": ["text", "image"], "cost": { "input": 2, "output": 8, "cache_read": 0.5 }, "source": "https://platform.openai.com/docs/models/o3" },
  { "id": "openai/o3-mini", "aliases": ["o3-mini", "o3-mini-2025-01-31"], "context_window": 200000, "max_output_tokens": 100000, "input_modalities": ["text"], "cost": { "input": 1.1, "output": 4.4, "cache_read": 0.55 }, "source": "https://platform.openai.com/docs/models/o3-mini" },
  { "id": "openai/o4-mini", "aliases": ["o4-mini", "o4-mini-2025-04-16"], "context_window": 200000, "max_output_tokens": 100000, "input_modalities": ["text", "image"], "cost": { "input": 1.1, "output": 4.4, "cache_read": 0.275 }, "source": "https://platform.openai.com/docs/models/o4-mini" },
  { "id": "openai/gpt-5", "aliases": ["gpt-5", "gpt-5-2025-08-07"], "context_window": 400000, "max_output_tokens": 128000, "input_modalities": ["text", "image"], "cost": { "input": 1.25, "output": 10, "cache_read": 0.125 }, "source": "https://platform.openai.com/docs/models/gpt-5" },
  { "id": "openai/gpt-5-mini", "aliases": ["gpt-5-mini", "gpt-5-mini-2025-08-07"], "context_window": 400000, "max_output_tokens": 128000, "input_modalities": ["text", "image"], "cost": { "input": 0.25, "output": 2, "cache_read": 0.025 }, "source": "https://platform.openai.com/docs/models/gpt-5-mini" },
  { "id": "openai/gpt-5-nano", "aliases": ["gpt-5-nano", "gpt-5-nano-2025-08-07"], "context_window": 400000, "max_output_tokens": 128000, "input_modalities": ["text", "image"], "cost": { "input": 0.05, "output": 0.4, "cache_read": 0.005 }, "source": "https://platform.openai.com/docs/models/gpt-5-nano" },
  { "id": "openai/gpt-oss-120b", "aliases": ["gpt-oss-120b"], "context_window": 131072, "input_modalities": ["text"], "source": "https://huggingface.co/openai/gpt-oss-120b" },
  { "id": "openai/gpt-oss-20b", "aliases": ["gpt-oss-20b"], "context_window": 131072, "input_modalities": ["text"], "source": "https://huggingface.co/openai/gpt-oss-20b" },

  { "id": "anthropic/claude-3.5-haiku", "aliases": ["claude-3-5-haiku-20241022", "claude-3-5-haiku-latest"], "context_window": 200000, "max_output_tokens": 8192, "input_modalities": ["text"], "cost": { "input": 0.8, "output": 4, "cache_read": 0.08, "cache_write": 1 }, "source": "https://docs.anthropic.com/en/docs/about-claude/models/overview" },
  { "id": "anthropic/claude-3.7-sonnet", "aliases": ["claude-3-7-sonnet-20250219", "claude-3-7-sonnet-latest"], "context_window": 200000, "max_output_tokens": 64000, "input_modalities": ["text", "image"], "cost": { "input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75 }, "source": "https://docs.anthropic.com/en/docs/about-claude/models/overview" },
  { "id": "anthropic/claude-sonnet-4", "aliases": ["claude-sonnet-4-20250514", "claude-sonnet-4-0"], "context_window": 200000, "max_output_tokens": 64000, "input_modalities": ["text", "image"], "cost": { "input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75 }, "source": "https://docs.anthropic.com/en/docs/about-claude/models/overview" },
  { "id": "anthropic/claude-opus-4", "aliases": ["claude-opus-4-20250514", "claude-opus-4-0"], "context_window": 200000, "max_output_tokens": 32000, "input_modalities": ["text", "image"], "cost": { "input": 15, "output": 75, "cache_read": 1.5, "cache_write": 18.75 }, "source": "https://docs.anthropic.com/en/docs/about-claude/models/overview" },
  { "id": "anthropic/claude-opus-4.1", "aliases": ["claude-opus-4-1-20250805", "claude-opus-4-1"], "context_window": 200000, "max_output_tokens": 32000, "input_modalities": ["text", "image"], "cost": { "input": 15, "output": 75, "cache_read": 1.5, "cache_write": 18.75 }, "source": "https://docs.anthropic.com/en/docs/about-claude/models/overview" },
  { "id": "anthropic/claude-sonnet-4.5", "aliases": ["claude-sonnet-4-5-20250929", "claude-sonnet-4-5"], "context_window": 200000, "max_output_tokens": 64000, "input_modalities": ["text", "image"], "cost": { "input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75 }, "source": "https://platform.claude.com/docs/en/models/sonnet-4-5/overview" },
  { "id": "anthropic/claude-haiku-4.5", "aliases": ["claude-haiku-4-5-20251001", "claude-haiku-4-5"], "context_window": 200000, "max_output_tokens": 64000, "input_modalities": ["text", "image"], "cost": { "input": 1, "output": 5, "cache_read": 0.1, "cache_write": 1.25 }, "source": "https://platform.claude.com/docs/en/models/haiku-4-5/overview" },
  { "id": "anthropic/claude-opus-4.5", "aliases": ["claude-opus-4-5-20251101", "claude-opus-4-5"], "context_window": 200000, "max_output_tokens": 64000, "input_modalities": ["text", "image"], "cost": { "input": 5, "output": 25, "cache_read": 0.5, "cache_write": 6.25 }, "source": "https://platform.claude.com/docs/en/models/opus-4-5/overview" },
  { "id": "anthropic/claude-opus-5", "aliases": ["claude-opus-5"], "context_window": 1000000, "max_output_tokens": 128000, "input_modalities": ["text", "image"], "cost": { "input": 5, "output": 25, "cache_read": 0.5, "cache_write": 6.25 }, "source": "https://platform.claude.com/docs/en/models/opus-5/overview" },
  { "id": "anthropic/claude-opus-5.5", "aliases": ["claude-opus-5-5"], "context_window": 1000000, "max_output_tokens": 128000, "input_modalities": ["text", "image"], "cost": { "input": 4, "output": 20, "cache_read": 0.2, "cache_write": 5 }, "source": "https://platform.claude.com/docs/en/models/opus-5-5/overview" },

  { "id": "google/gemini-2.5-pro", "aliases": ["gemini-2.5-pro"], "context_window": 1048576, "max_output_tokens": 65536, "input_modalities": ["text", "image", "audio"], "cost": { "input": 1.25, "output": 10 }, "source": "https://ai.google.dev/gemini-api/docs/pricing" },
  { "id": "google/gemini-2.5-flash", "aliases": ["gemini-2.5-flash"], "context_window": 1048576, "max_output_tokens": 65536, "input_modalities": ["text", "image", "audio"], "cost": { "input": 0.3, "output": 2.5 }, "source": "https://ai.google.dev/gemini-api/docs/pricing" },
  { "id": "google/gemini-2.5-flash-lite", "aliases": ["gemini-2.5-flash-lite"], "context_window": 1048576, "max_output_tokens": 65536, "input_modalities": ["text", "image", "audio"], "cost": { "input": 0.1, "output": 0.4 }, "source": "https://ai.google.dev/gemini-api/docs/pricing" },
  { "id": "google/gemini-2.0-flash-001", "aliases": ["gemini-2.0-flash", "gemini-2.0-flash-001"], "context_window": 1048576, "max_output_tokens": 8192, "input_modalities": ["text", "image", "audio"], "cost": { "input": 0.1, "output": 0.4 }, "source": "https://ai.google.dev/gemini-api/docs/pricing" },

  { "id": "deepseek/deepseek-chat", "aliases": ["deepseek-chat"], "context_window": 128000, "input_modalities": ["text"], "source": "https://api-docs.deepseek.com/quick_start/pricing" },
  { "id": "deepseek/deepseek-r1", "aliases": ["deepseek-reasoner"], "context_window": 128000, "input_modalities": ["text"], "source": "https://api-docs.deepseek.com/quick_start/pricing" },

  { "id": "qwen/qwen-2.5-72b-instruct", "aliases": ["qwen2.5-72b-instruct", "qwen/qwen2.5-72b-instruct"], "context_window": 32768, "input_modalities": ["text"], "source": "https://huggingface.co/Qwen/Qwen2.5-72B-Instruct" },
  { "id": "qwen/qwen3-235b-a22b", "aliases": ["qwen3-235b-a22b"], "context_window": 40960, "input_modalities": ["text"], "source": "https://huggingface.co/Qwen/Qwen3-235B-A22B" },
  { "id": "qwen/qwen3-32b", "aliases": ["qwen3-32b"], "context_window": 40960, "input_modalities": ["text"], "source": "https://huggingface.co/Qwen/Qwen3-32B" },
  { "id": "qwen/qwen3-30b-a3b", "aliases": ["qwen3-30b-a3b"], "context_window": 40960, "input_modalities": ["text"], "source": "https://huggingface.co/Qwen/Qwen3-30B-A3B" },
  { "id": "qwen/qwen3-8b", "aliases": ["qwen3-8b"], "context_window": 40960, "input_modalities": ["text"], "source": "https://huggingface.co/Qwen/Qwen3-8B" },
  { "id": "qwen/qwen3-coder", "aliases": ["qwen3-coder-480b-a35b-instruct", "qwen/qwen3-coder-480b-a35b-instruct"], "context_window": 262144, "input_modalities": ["text"], "source": "https://huggingface.co/Qwen/Qwen3-Coder-480B-A35B-Instruct" },

  { "id": "meta-llama/llama-3.1-8b-instruct", "aliases": ["llama-3.1-8b-instruct"], "context_window": 131072, "input_modalities": ["text"], "source": "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct" },
  { "id": "meta-llama/llama-3.1-70b-instruct", "aliases": ["llama-3.1-70b-instruct"], "context_window": 131072, "input_modalities": ["text"], "source": "https://huggingface.co/meta-llama/Llama-3.1-70B-Instruct" },
  { "id": "meta-llama/llama-3.1-405b-instruct", "aliases": ["llama-3.1-405b-instruct"], "context_window": 131072, "input_modalities": ["text"], "source": "https://huggingface.co/meta-llama/Llama-3.1-405B-Instruct" },
  { "id": "meta-llama/llama-3.3-70b-instruct", "aliases": ["llama-3.3-70b-instruct", "llama-3.3-70b-versatile"], "context_window": 131072, "input_modalities": ["text"], "source": "https://huggingface.co/meta-llama/Llama-3.3-70B-Instruct" }
]
/* catalogue:end */;

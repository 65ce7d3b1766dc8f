import type { ClaudeCliSettings, ModelInfo, ReasoningConfig, Settings } from "../../config/types.js";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { VeilError } from "../../errors.js";
import { VERSION } from "../../version.js";

/** Thinking budget per reasoning effort (Anthropic's minimum is 1024). */
export const EFFORT_THINKING_BUDGET: Record<string, number> = { minimal: 1024, low: 4096, medium: 10_000, high: 24_000, xhigh: 32_000 };

/** Veil's own secrets never reach the child. */
const WITHHELD_ENV = ["VEIL_SECRET", "VEIL_API_KEY"];

export type ThinkingOption = { type: "disabled" } | { type: "enabled"; budgetTokens: number } | undefined;

/** Reasoning effort → the SDK's thinking option; no reasoning config leaves the SDK's default. */
export function thinkingFor(reasoning: ReasoningConfig | null): ThinkingOption {
  if (!reasoning) return undefined;
  if (reasoning.effort === "none") return { type: "disabled" };
  const budget = reasoning.max_tokens ?? EFFORT_THINKING_BUDGET[reasoning.effort ?? "medium"] ?? EFFORT_THINKING_BUDGET.medium!;
  return { type: "enabled", budgetTokens: Math.max(1024, budget) };
}

/** Reasoning effort → the SDK's effort option (adaptive-thinking models read this, not a budget). */
export function effortFor(reasoning: ReasoningConfig | null): "low" | "medium" | "high" | "xhigh" | undefined {
  const effort = reasoning?.effort;
  if (!effort || effort === "none") return undefined;
  return effort === "minimal" ? "low" : effort;
}

/**
 * The key the child gets: apiKey > apiKeyEnv > ANTHROPIC_API_KEY. A named but unset
 * variable, or no credential at all (not even a `claude /login`), is a config error.
 */
export function resolveApiKey(cli: ClaudeCliSettings | undefined, env: Record<string, string | undefined>): string | undefined {
  if (cli?.apiKey) return cli.apiKey;
  if (cli?.apiKeyEnv) {
    const value = env[cli.apiKeyEnv];
    if (!value) throw new VeilError("CONFIG_ERROR", `the claude-cli engine's key: settings.claudeCli.apiKeyEnv names ${cli.apiKeyEnv}, which is not set in the environment`);
    return value;
  }
  if (env.ANTHROPIC_API_KEY) return env.ANTHROPIC_API_KEY;
  if (!hasClaudeLogin(env)) {
    throw new VeilError("CONFIG_ERROR", "the claude-cli engine has no Anthropic API key: set settings.claudeCli.apiKey or apiKeyEnv, or ANTHROPIC_API_KEY (or log in with `claude /login`)");
  }
  return undefined;
}

/** Credentials the claude binary finds by itself (a token in the environment, or a stored login). */
function hasClaudeLogin(env: Record<string, string | undefined>): boolean {
  if (env.ANTHROPIC_AUTH_TOKEN || env.CLAUDE_CODE_OAUTH_TOKEN) return true;
  const dir = env.CLAUDE_CONFIG_DIR ?? (env.HOME ? join(env.HOME, ".claude") : undefined);
  return dir !== undefined && existsSync(join(dir, ".credentials.json"));
}

/**
 * The child's environment: Veil's own (minus its secrets), the Anthropic endpoint (or the
 * recording proxy's) and
 * key, no telemetry or update traffic, Veil's retry count, and the compaction window.
 */
export function childEnv(
  settings: Settings,
  env: Record<string, string | undefined>,
  model: ModelInfo,
  apiKey: string | undefined,
  turn: { threshold?: number; maxOutputTokens?: number; baseUrl?: string } = {},
): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = { ...env };
  for (const key of WITHHELD_ENV) delete out[key];
  const cli = settings.claudeCli;
  if (cli?.baseUrl) out.ANTHROPIC_BASE_URL = cli.baseUrl.replace(/\/+$/, "");
  // Recording or replaying: the SDK talks to Veil's loopback proxy, which knows the real base URL.
  if (turn.baseUrl) out.ANTHROPIC_BASE_URL = turn.baseUrl;
  if (apiKey) out.ANTHROPIC_API_KEY = apiKey;
  out.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1";
  out.DISABLE_TELEMETRY = "1";
  out.DISABLE_AUTOUPDATER = "1";
  out.CLAUDE_CODE_MAX_RETRIES = String(settings.retry.maxRetries);
  out.CLAUDE_AGENT_SDK_CLIENT_APP = `veilcli/${VERSION}`;
  // The SDK compacts its own conversation; these make it do so at Veil's threshold of the catalogue window.
  out.CLAUDE_CODE_AUTO_COMPACT_WINDOW = String(model.context_window);
  const threshold = turn.threshold ?? compactionThreshold(settings);
  if (threshold !== undefined) out.CLAUDE_AUTOCOMPACT_PCT_OVERRIDE = String(Math.round(threshold * 100));
  // The catalogue's max_output_tokens caps each answer, as max_tokens does on the openai engine.
  if (turn.maxOutputTokens !== undefined) out.CLAUDE_CODE_MAX_OUTPUT_TOKENS = String(turn.maxOutputTokens);
  return out;
}

/** settings.defaultCompaction.autoThreshold, when set. */
export function compactionThreshold(settings: Settings): number | undefined {
  const threshold = settings.defaultCompaction?.autoThreshold;
  return typeof threshold === "number" ? threshold : undefined;
}

export const DEFAULT_COMPACTION_THRESHOLD = 0.8;

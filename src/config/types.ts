/** Plain-data configuration, resolved once at start and passed down frozen. */

export interface ProviderConfig {
  /** Wire protocol. Only "openai" (chat completions) today. */
  type: "openai";
  baseUrl: string;
  /** Literal key; prefer apiKeyEnv so the key stays out of files. */
  apiKey?: string;
  /** Name of the environment variable holding the key. */
  apiKeyEnv?: string;
  /** Extra request headers. */
  headers?: Record<string, string>;
  /**
   * The older single timeout, ms: when set, the default of both firstByteTimeoutMs and
   * idleTimeoutMs (each of them, when set, wins for its phase). default: unset
   */
  timeoutMs?: number;
  /**
   * From sending a request to the first byte of the response body, ms: a local model's
   * prefill of a long prompt can take minutes. default: timeoutMs ?? 600000
   */
  firstByteTimeoutMs?: number;
  /** Longest silence between chunks once the body streams, ms. default: timeoutMs ?? 120000 */
  idleTimeoutMs?: number;
  /**
   * How reasoning goes on the wire. default: "openrouter" when the base URL's
   * host ends in openrouter.ai, else "openai" (see llm/openai-compatible/reasoning.ts).
   */
  reasoning?: ReasoningStyle;
  /**
   * When a turn with an output schema sends `response_format: { type: "json_schema" }`:
   * "with-tools" on every model call (the provider keeps calling tools under it, as OpenAI's
   * API does), "without-tools" only on calls that offer no tools (repair requests are then
   * sent without them), "none" never (the schema is asked for in words only). default:
   * "with-tools" when the base URL's host is api.openai.com, else "without-tools" (see
   * llm/openai-compatible/response-format.ts).
   */
  structuredOutput?: StructuredOutputMode;
}

export type StructuredOutputMode = "with-tools" | "without-tools" | "none";

export type ReasoningStyle = "openai" | "openrouter" | "anthropic" | "none";

export const REASONING_STYLES: readonly ReasoningStyle[] = ["openai", "openrouter", "anthropic", "none"];

export interface Budget {
  /** Total tokens a session may consume (prompt + completion). default: unlimited */
  max_tokens?: number;
  /** Wall-clock seconds one run may take. default: unlimited */
  max_wall_seconds?: number;
  /** How deep agent_spawn may nest. default: unlimited */
  max_spawn_depth?: number;
  /** Model calls one run may make. default: 50 */
  max_iterations?: number;
}

export type ReasoningEffort = "none" | "minimal" | "low" | "medium" | "high" | "xhigh";

export interface ReasoningConfig {
  /** "xhigh" is accepted beyond the five common efforts none…high (OpenAI and OpenRouter know it). */
  effort?: ReasoningEffort;
  max_tokens?: number;
}

/** Context compaction; agent.json `compaction` overrides key by key. */
export interface CompactionSettings {
  /** Fraction of the model's context_window at which the history is compacted, in (0, 1]. default: 0.8 */
  autoThreshold: number;
  /** Newest whole messages up to this many tokens are never pruned or summarised. default: 20000 */
  keepRecentTokens: number;
  /** Model that writes summaries. default: settings.summarizerModel, then the session's model */
  summarizerModel?: string;
}

export interface RetrySettings {
  /** Retries of one model before moving to the next. default: 2 */
  maxRetries: number;
  /** First backoff, ms; doubles each retry. default: 500 */
  baseDelayMs: number;
  /** Backoff ceiling, ms (also caps Retry-After). default: 30000 */
  maxDelayMs: number;
}

/** Where sessions, messages and events live. */
export type StoreSettings =
  /** The embedded default: `<workspace>/.veil/veil.db`. */
  | { type: "sqlite" }
  /** A PostgreSQL database shared by every node of a service. */
  | { type: "postgres"; url: string };
/** settings.claudeCli: the claude-cli engine (`cc/…` model keys). */
export interface ClaudeCliSettings {
  /** Becomes the SDK's ANTHROPIC_BASE_URL. default: the SDK's own (Anthropic's API) */
  baseUrl?: string;
  /** Literal key; prefer apiKeyEnv. default: ANTHROPIC_API_KEY from the environment */
  apiKey?: string;
  /** Name of the environment variable holding the key. */
  apiKeyEnv?: string;
  /** Keep only native `Read`; Veil's own tools (over MCP) do the rest. default: true */
  redirectBasicTools?: boolean;
  /** Native Claude Code tools to keep; only a fixed known-safe set is honoured. default: ["Read"] */
  nativeTools?: string[];
  /** Path to the `claude` binary. default: the one bundled with the SDK */
  executable?: string;
}

/** An event an outbound webhook may subscribe to. */
export type WebhookEvent = "chat.done" | "method.pending" | "session.budget";

/** settings.webhooks.in.<name>: `POST /webhooks/<name>` starts a session of `agent`. */
export interface InboundWebhook {
  agent: string;
  /** Environment variable holding the secret the sender signs the raw body with (HMAC-SHA256). */
  secretEnv: string;
  /** The prompt; every `{{body}}` is replaced by the raw request body. */
  prompt: string;
}

/** One entry of settings.webhooks.out. The URL is trusted: settings alone decide where Veil sends requests. */
export interface OutboundWebhook {
  url: string;
  events: WebhookEvent[];
  /** Environment variable holding the secret the body is signed with (HMAC-SHA256). */
  secretEnv: string;
}

export interface WebhookSettings {
  in: Record<string, InboundWebhook>;
  out: OutboundWebhook[];
}

export interface Settings {
  providers: Record<string, ProviderConfig>;
  defaultProvider?: string;
  defaultModel?: string;
  /** Tried in order after a model's own fallbacks. default: [] */
  fallbackModels: string[];
  budget: Budget;
  /** Model for agent_control get-summary. default: defaultModel */
  summarizerModel?: string;
  /** Cap on get-summary calls per minute; unset = unlimited. */
  summarizerMaxCallsPerMinute?: number;
  defaultCompaction: CompactionSettings;
  files: { writeRoots: string[] };
  webFetch: {
    allowHosts: string[];
    /** Bytes one fetch may download, after decompression too. default: 10 MiB */
    maxBytes?: number;
    /** Wall time for one fetch including redirects and body, ms. default: 30000 */
    timeoutMs?: number;
    /** Redirect hops followed. default: 5 */
    maxRedirects?: number;
  };
  webSearch: { endpoint: string };
  retry: RetrySettings;
  limits: {
    /** Sessions that may be open (not closed) at once. default: 200 */
    maxLiveSessions: number;
    /** HTTP request body cap, bytes. default: 10 MiB */
    maxBodyBytes: number;
    /**
     * Sessions a one-shot caller started (`veil run`, `agent/<name>` on the OpenAI wire) and
     * nobody continued are closed once idle this long: "24h", "7d", … or seconds; 0 or "off":
     * never. default: "24h"
     */
    idleSessionTtl: string | number;
  };
  wakeup: {
    /** Shortest interval for a looping wake-up, seconds. default: 10 */
    minLoopSeconds: number;
  };
  claudeCli?: ClaudeCliSettings;
  /**
   * MCP servers by name (Claude Code's `.mcp.json` shape; `<workspace>/.mcp.json` is read
   * too, settings win on the same name). Entries are checked one by one when the tools are
   * discovered, so one bad entry breaks only its own server.
   */
  mcpServers?: Record<string, McpServerConfig>;
  /** Lifecycle hooks, Claude Code's shape. */
  hooks?: HooksSettings;
  /** default: { type: "sqlite" }; env VEIL_DATABASE_URL selects postgres with that URL. */
  store: StoreSettings;
  /** Traces over OTLP/HTTP; unset (and no OTEL_EXPORTER_OTLP_ENDPOINT): no telemetry code loads. */
  telemetry?: TelemetrySettings;
  cluster: {
    /** How long a node's claim on a session lasts without renewal, seconds. default: 15 */
    leaseSeconds: number;
  };
  /** Where bash shells and custom-tool processes run (agent.json may narrow it). */
  sandbox: SandboxSettings;
  /** Tool calls that wait for a human's approval before they run (agent.json may add to it). */
  approval: ApprovalSettings;
  schedules: {
    /** Scheduled runs one node runs at once; due times past it are taken and wait for a place. default: 64 */
    maxConcurrentRuns: number;
  };
  /** Signed webhooks: in, prompts that start a session; out, events POSTed elsewhere. default: none */
  webhooks: WebhookSettings;
  /** false: turns leave no checkpoints and the workspace is not mirrored under Veil's home. default: true */
  checkpoints: { enabled: boolean };
  /** Anything else found in settings.json, kept for custom tools. */
  [extra: string]: unknown;
}

/** auto: sandboxed when bubblewrap works, else as before with one warning; required: no sandbox, no run; off: never. */
export type SandboxMode = "auto" | "required" | "off";
/** full: the host's network; allowlist: only allowHosts, through Veil's proxy; none: no network at all. */
export type SandboxNetwork = "full" | "allowlist" | "none";

export interface SandboxSettings {
  /** default: "auto" */
  mode: SandboxMode;
  /** default: "full" */
  network: SandboxNetwork;
  /** Host names ("registry.npmjs.org") or suffixes ("*.example.com") the allowlist proxy lets through. default: [] */
  allowHosts: string[];
  /** Paths (a leading ~ is the server user's home) that are not visible in the sandbox. default: common credential stores */
  readDeny: string[];
  /** Names of the server's environment variables a sandboxed process gets. default: PATH, locale, TERM, TZ, USER, LOGNAME */
  envPass: string[];
}

export interface ApprovalSettings {
  /** Tool names or `prefix*` patterns whose calls wait for approval. default: [] */
  tools: string[];
  /** No answer within this long is a denial. default: 300 */
  timeoutSeconds: number;
}

/** Prices in USD per million tokens. */
export interface ModelCost {
  input: number;
  output: number;
  /** Cached prompt tokens (cache hits). default: input */
  cache_read?: number;
  /** Prompt tokens written to the cache. default: input */
  cache_write?: number;
}

export interface ModelInfo {
  input_modalities: ("text" | "image" | "audio")[];
  context_window: number;
  max_output_tokens?: number;
  fallbacks?: string[];
  cost?: ModelCost;
}

/** A models.json entry as written: any of ModelInfo's fields; the rest come from the catalogue and defaults (llm/models.ts modelInfo). */
export type ModelEntry = Partial<ModelInfo>;

export interface ModeConfig {
  enabled: boolean;
  /** Allowlist; empty = every tool. */
  tools: string[];
  /** Always wins over `tools`. */
  disallowedTools: string[];
  /** Custom tools in tools[] from turn one. */
  preActivatedTools: string[];
}

export interface AgentConfig {
  name: string;
  description: string;
  model?: string;
  systemPrompt: string;
  reasoning?: ReasoningConfig;
  /** Overrides settings.defaultCompaction key by key. */
  compaction?: Partial<CompactionSettings>;
  budget: Budget;
  modes: Record<string, ModeConfig>;
  /** false: no AGENTS.md / CLAUDE.md instructions in this agent's prompt or tool results. default: true */
  instructions?: boolean;
  /** enabled false: this agent's turns leave no checkpoints (settings.checkpoints off wins). */
  checkpoints?: { enabled?: boolean };
  /** Narrows settings.sandbox for this agent's shells and tool processes (never widens it). */
  sandbox?: Partial<SandboxSettings>;
  /** Adds to settings.approval for this agent's calls. */
  approval?: Partial<ApprovalSettings>;
  /** Variables this agent's shells and tool processes get (in the sandbox, besides envPass). */
  env?: Record<string, string>;
  /** Folder holding agent.json; null for the built-in default agent. */
  agentFolder: string | null;
  source: "builtin" | "global" | "project";
}

export interface VeilPaths {
  workspace: string;
  /** <workspace>/.veil */
  projectDir: string;
  /** $VEIL_HOME, default ~/.veil */
  homeDir: string;
  dbPath: string;
  secretPath: string;
  memoryDir: string;
}

export interface VeilConfig {
  paths: VeilPaths;
  settings: Settings;
  /** models.json entries (global < project, field by field); read them through llm/models.ts modelInfo. */
  models: Record<string, ModelEntry>;
  agents: Record<string, AgentConfig>;
  /** Environment the config was read with (for apiKeyEnv); never sent to tools. */
  env: Record<string, string | undefined>;
}

/** One MCP server entry: a local process (stdio, the default) or a remote endpoint. */
export type McpServerConfig = McpStdioServerConfig | McpRemoteServerConfig;

export interface McpServerCommon {
  /** Seconds to wait for the server to start and list its tools. default: 30 */
  startupTimeoutSeconds?: number;
  /** Seconds one tools/call may take. default: 120 */
  callTimeoutSeconds?: number;
}

export interface McpStdioServerConfig extends McpServerCommon {
  type?: "stdio";
  command: string;
  args?: string[];
  /** Merged over Veil's environment (minus provider keys). */
  env?: Record<string, string>;
  /** Working directory; relative to the workspace. default: the workspace */
  cwd?: string;
}

export interface McpRemoteServerConfig extends McpServerCommon {
  /** "http" is streamable HTTP; "sse" the older HTTP+SSE transport. */
  type: "http" | "sse";
  url: string;
  headers?: Record<string, string>;
}

export type HookEventName = "PreToolUse" | "PostToolUse" | "UserPromptSubmit" | "Stop" | "SessionStart";

export interface HookCommand {
  type: "command";
  /** Run with `sh -c` in the workspace; gets the event as JSON on stdin. */
  command: string;
  /** Seconds before the process group is killed (counts as exit 0). default: 60 */
  timeout?: number;
}

export interface HookMatcher {
  /** Regular expression over the whole tool name; empty or "*" matches every tool. Tool events only. */
  matcher?: string;
  hooks: HookCommand[];
}

export type HooksSettings = Partial<Record<HookEventName, HookMatcher[]>>;

export interface TelemetrySettings {
  /** OTLP/HTTP base URL: spans go to `<url>/v1/traces`. */
  otlpEndpoint?: string;
  /** default: "http/protobuf" */
  protocol?: "http/protobuf" | "http/json";
  headers?: Record<string, string>;
  /** default: "veil" */
  serviceName?: string;
}

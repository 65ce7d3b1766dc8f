import { Type } from "../schema.js";
import { DURATION_PATTERN } from "../base/duration.js";
import type { ReasoningEffort, ReasoningStyle, SandboxMode, SandboxNetwork, StructuredOutputMode } from "./types.js";

/**
 * One schema per config file; validation errors name the file and the field. Every key Veil
 * reads is named here: a key a file holds that its schema does not name is reported as
 * unknown (config/unknown-keys.ts), an error where the object is closed, else a warning.
 */

const BudgetSchema = Type.Object(
  {
    max_tokens: Type.Optional(Type.Integer({ minimum: 1, description: "Total tokens a session may use." })),
    max_wall_seconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: "Wall seconds one run may take." })),
    max_spawn_depth: Type.Optional(Type.Integer({ minimum: 0, description: "How deep agent_spawn may nest." })),
    max_iterations: Type.Optional(Type.Integer({ minimum: 1, description: "Model calls one run may make." })),
  },
  { additionalProperties: false },
);

const ReasoningSchema = Type.Object(
  {
    effort: Type.Optional(Type.Unsafe<ReasoningEffort>({ type: "string", enum: ["none", "minimal", "low", "medium", "high", "xhigh"] })),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);

const CompactionSchema = Type.Object(
  {
    autoThreshold: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1, description: "Fraction of context_window that triggers compaction, in (0, 1]." })),
    keepRecentTokens: Type.Optional(Type.Integer({ minimum: 0, description: "Tokens of newest messages kept whole." })),
    summarizerModel: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);

const CostSchema = Type.Object(
  {
    input: Type.Number({ minimum: 0, description: "USD per million prompt tokens." }),
    output: Type.Number({ minimum: 0, description: "USD per million output tokens." }),
    cache_read: Type.Optional(Type.Number({ minimum: 0 })),
    cache_write: Type.Optional(Type.Number({ minimum: 0 })),
  },
  { additionalProperties: false },
);

const ProviderSchema = Type.Object(
  {
    type: Type.Literal("openai"),
    baseUrl: Type.String({ pattern: "^https?://" }),
    apiKey: Type.Optional(Type.String()),
    apiKeyEnv: Type.Optional(Type.String()),
    headers: Type.Optional(Type.Record(Type.String(), Type.String())),
    timeoutMs: Type.Optional(Type.Integer({ minimum: 1, description: "ms; the default of firstByteTimeoutMs and idleTimeoutMs." })),
    firstByteTimeoutMs: Type.Optional(Type.Integer({ minimum: 1, description: "ms from sending a request to the response body's first byte (default 600000)." })),
    idleTimeoutMs: Type.Optional(Type.Integer({ minimum: 1, description: "ms of silence allowed between chunks once the body streams (default 120000)." })),
    reasoning: Type.Optional(
      Type.Unsafe<ReasoningStyle>({ type: "string", enum: ["openai", "openrouter", "anthropic", "none"], description: "How reasoning goes on the wire." }),
    ),
    structuredOutput: Type.Optional(
      Type.Unsafe<StructuredOutputMode>({ type: "string", enum: ["with-tools", "without-tools", "none"], description: "When an output schema goes out as response_format." }),
    ),
  },
  { additionalProperties: false },
);

const ClaudeCliSchema = Type.Object(
  {
    baseUrl: Type.Optional(Type.String({ pattern: "^https?://", description: "ANTHROPIC_BASE_URL for the Claude Agent SDK." })),
    apiKey: Type.Optional(Type.String()),
    apiKeyEnv: Type.Optional(Type.String({ description: "Environment variable holding the Anthropic key." })),
    redirectBasicTools: Type.Optional(Type.Boolean({ description: "Keep only native Read; Veil's tools do the rest (default true)." })),
    nativeTools: Type.Optional(Type.Array(Type.String(), { description: "Native Claude Code tools to keep (known-safe set only)." })),
    executable: Type.Optional(Type.String({ description: "Path to the claude binary." })),
  },
  { additionalProperties: false },
);

const HookMatcherSchema = Type.Object(
  {
    matcher: Type.Optional(Type.String({ description: "Regular expression over the whole tool name; empty or \"*\" = every tool." })),
    hooks: Type.Array(
      Type.Object(
        {
          type: Type.Literal("command"),
          command: Type.String({ minLength: 1, description: "Run with sh -c in the workspace; the event arrives as JSON on stdin." }),
          timeout: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: "Seconds; default 60." })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

/** Hooks are guardrails: a malformed entry fails the load rather than being skipped silently. */
const HooksSchema = Type.Object(
  {
    PreToolUse: Type.Optional(Type.Array(HookMatcherSchema)),
    PostToolUse: Type.Optional(Type.Array(HookMatcherSchema)),
    UserPromptSubmit: Type.Optional(Type.Array(HookMatcherSchema)),
    Stop: Type.Optional(Type.Array(HookMatcherSchema)),
    SessionStart: Type.Optional(Type.Array(HookMatcherSchema)),
  },
  { additionalProperties: false },
);

/** What is read again of a settings file when it changes while Veil runs (config/hooks-file.ts). */
export const HooksFileSchema = Type.Object({ hooks: Type.Optional(HooksSchema) }, { additionalProperties: true });
const SandboxSchema = Type.Object(
  {
    mode: Type.Optional(Type.Unsafe<SandboxMode>({ type: "string", enum: ["auto", "required", "off"], description: "auto (default), required or off." })),
    network: Type.Optional(Type.Unsafe<SandboxNetwork>({ type: "string", enum: ["full", "allowlist", "none"], description: "full (default), allowlist or none." })),
    allowHosts: Type.Optional(Type.Array(Type.String({ pattern: "^(\\*\\.)?[A-Za-z0-9_.:\\[\\]-]+$" }), { description: "Host names or *.suffixes the allowlist proxy lets through." })),
    readDeny: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: "Paths not visible in the sandbox (~ is the server user's home)." })),
    envPass: Type.Optional(Type.Array(Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]*$" }), { description: "Environment variables passed into the sandbox." })),
  },
  { additionalProperties: false },
);

const ApprovalSchema = Type.Object(
  {
    tools: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: "Tool names or prefix* patterns whose calls wait for approval." })),
    timeoutSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: "No answer within this long denies the call (default 300)." })),
  },
  { additionalProperties: false },
);

const WEBHOOK_EVENTS = ["chat.done", "method.pending", "session.budget"] as const;

const WebhooksSchema = Type.Object(
  {
    in: Type.Optional(
      Type.Record(
        Type.String(),
        Type.Object(
          {
            agent: Type.String({ minLength: 1, description: "Agent whose new session runs the prompt." }),
            secretEnv: Type.String({ minLength: 1, description: "Environment variable holding the HMAC-SHA256 secret senders sign with." }),
            prompt: Type.String({ minLength: 1, description: "The prompt; {{body}} is replaced by the raw request body." }),
          },
          { additionalProperties: false },
        ),
        // The name is a path segment: POST /webhooks/<name>.
        { propertyNames: { pattern: "^[A-Za-z0-9][A-Za-z0-9_.-]*$" } },
      ),
    ),
    out: Type.Optional(
      Type.Array(
        Type.Object(
          {
            url: Type.String({ pattern: "^https?://", description: "Where events are POSTed (trusted: settings decide where Veil sends requests)." }),
            events: Type.Array(Type.Unsafe<(typeof WEBHOOK_EVENTS)[number]>({ type: "string", enum: [...WEBHOOK_EVENTS] }), { minItems: 1 }),
            secretEnv: Type.String({ minLength: 1, description: "Environment variable holding the HMAC-SHA256 secret the body is signed with." }),
          },
          { additionalProperties: false },
        ),
      ),
    ),
  },
  { additionalProperties: false },
);

/** Whether turns leave checkpoints (and so whether the workspace is mirrored under Veil's home). */
const CheckpointsSchema = Type.Object(
  { enabled: Type.Optional(Type.Boolean({ description: "false: no checkpoints, no mirror copy of the workspace, no revert of files. default: true" })) },
  { additionalProperties: false },
);

export const SettingsFileSchema = Type.Object(
  {
    providers: Type.Optional(Type.Record(Type.String(), ProviderSchema)),
    defaultProvider: Type.Optional(Type.String()),
    defaultModel: Type.Optional(Type.String()),
    fallbackModels: Type.Optional(Type.Array(Type.String())),
    budget: Type.Optional(BudgetSchema),
    summarizerModel: Type.Optional(Type.String()),
    summarizerMaxCallsPerMinute: Type.Optional(Type.Integer({ minimum: 1 })),
    defaultCompaction: Type.Optional(CompactionSchema),
    files: Type.Optional(Type.Object({ writeRoots: Type.Optional(Type.Array(Type.String())) })),
    webFetch: Type.Optional(
      Type.Object({
        allowHosts: Type.Optional(Type.Array(Type.String())),
        maxBytes: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: "Bytes one fetch may download, after decompression too (default 10 MiB)." })),
        timeoutMs: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: "Wall time of one fetch with its redirects and body, ms (default 30000)." })),
        maxRedirects: Type.Optional(Type.Integer({ minimum: 0, description: "Redirect hops followed (default 5)." })),
      }),
    ),
    webSearch: Type.Optional(Type.Object({ endpoint: Type.Optional(Type.String({ pattern: "^https?://" })) })),
    retry: Type.Optional(
      Type.Object({
        maxRetries: Type.Optional(Type.Integer({ minimum: 0, maximum: 10 })),
        baseDelayMs: Type.Optional(Type.Integer({ minimum: 0 })),
        maxDelayMs: Type.Optional(Type.Integer({ minimum: 0 })),
      }),
    ),
    limits: Type.Optional(
      Type.Object({
        maxLiveSessions: Type.Optional(Type.Integer({ minimum: 1 })),
        maxBodyBytes: Type.Optional(Type.Integer({ minimum: 1024 })),
        idleSessionTtl: Type.Optional(
          Type.Union([Type.String({ pattern: `${DURATION_PATTERN}|^off$` }), Type.Number({ minimum: 0 })], {
            description: 'How long a session that veil run or the OpenAI wire started, and nobody continued, stays open once idle: "24h", "7d", … or seconds; 0 or "off": never.',
          }),
        ),
      }),
    ),
    wakeup: Type.Optional(Type.Object({ minLoopSeconds: Type.Optional(Type.Number({ minimum: 0 })) })),
    claudeCli: Type.Optional(ClaudeCliSchema),
    // Each origin is checked, with its own messages, where the server reads them (server/cors.ts).
    server: Type.Optional(Type.Object({ allowedOrigins: Type.Optional(Type.Unknown({ description: "Origins (scheme://host[:port]) that get CORS answers." })) })),
    // Each server entry is checked on its own at discovery (tools/mcp/config.ts): one bad entry breaks only that server.
    mcpServers: Type.Optional(Type.Record(Type.String(), Type.Unknown({ description: "An MCP server: { command, args?, env? } or { type: \"http\" | \"sse\", url, headers? }" }))),
    hooks: Type.Optional(HooksSchema),
    store: Type.Optional(
      Type.Object(
        {
          type: Type.Union([Type.Literal("sqlite"), Type.Literal("postgres")], { description: "sqlite (default) or postgres." }),
          url: Type.Optional(Type.String({ pattern: "^postgres(ql)?://", description: "postgres://user:password@host:port/database" })),
        },
        { additionalProperties: false },
      ),
    ),
    cluster: Type.Optional(
      Type.Object(
        { leaseSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: "Seconds a node's session lease lasts unrenewed." })) },
        { additionalProperties: false },
      ),
    ),
    sandbox: Type.Optional(SandboxSchema),
    approval: Type.Optional(ApprovalSchema),
    schedules: Type.Optional(
      Type.Object(
        { maxConcurrentRuns: Type.Optional(Type.Integer({ minimum: 1, description: "Scheduled runs one node runs at once (default 64)." })) },
        { additionalProperties: false },
      ),
    ),
    webhooks: Type.Optional(WebhooksSchema),
    checkpoints: Type.Optional(CheckpointsSchema),
    telemetry: Type.Optional(
      Type.Object(
        {
          otlpEndpoint: Type.Optional(Type.String({ pattern: "^https?://", description: "OTLP/HTTP base URL traces go to (<url>/v1/traces); OTEL_EXPORTER_OTLP_ENDPOINT wins." })),
          protocol: Type.Optional(Type.Union([Type.Literal("http/protobuf"), Type.Literal("http/json")], { description: "OTLP encoding (default http/protobuf); OTEL_EXPORTER_OTLP_PROTOCOL wins." })),
          headers: Type.Optional(Type.Record(Type.String(), Type.String(), { description: "Headers sent with every export (e.g. an API key)." })),
          serviceName: Type.Optional(Type.String({ minLength: 1, description: "service.name of the spans (default veil); OTEL_SERVICE_NAME wins." })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: true },
);

export const ModelsFileSchema = Type.Record(
  Type.String(),
  Type.Object(
    {
      input_modalities: Type.Optional(Type.Array(Type.Union([Type.Literal("text"), Type.Literal("image"), Type.Literal("audio")]))),
      context_window: Type.Optional(Type.Integer({ minimum: 1 })),
      max_output_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
      fallbacks: Type.Optional(Type.Array(Type.String())),
      cost: Type.Optional(CostSchema),
    },
    { additionalProperties: true },
  ),
);

const ModeSchema = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    tools: Type.Optional(Type.Array(Type.String())),
    disallowedTools: Type.Optional(Type.Array(Type.String())),
    preActivatedTools: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: true },
);

export const AgentFileSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ pattern: "^[A-Za-z0-9][A-Za-z0-9_.-]*$" })),
    description: Type.Optional(Type.String()),
    model: Type.Optional(Type.String()),
    systemPrompt: Type.Optional(Type.String()),
    reasoning: Type.Optional(ReasoningSchema),
    compaction: Type.Optional(CompactionSchema),
    budget: Type.Optional(BudgetSchema),
    modes: Type.Optional(Type.Record(Type.String(), ModeSchema)),
    instructions: Type.Optional(Type.Boolean({ description: "false: the agent gets no AGENTS.md / CLAUDE.md instructions. default: true" })),
    sandbox: Type.Optional(SandboxSchema),
    approval: Type.Optional(ApprovalSchema),
    env: Type.Optional(Type.Record(Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]*$" }), Type.String(), { description: "Variables for this agent's shells and tool processes." })),
    checkpoints: Type.Optional(CheckpointsSchema),
  },
  { additionalProperties: true },
);

export { BudgetSchema, CompactionSchema, ReasoningSchema };

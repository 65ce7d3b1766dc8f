import type { Hono } from "hono";
import { Type, type TSchema } from "../schema.js";
import { BrokenToolListingSchema, ToolListingSchema } from "../tools/catalog.js";
import { VERSION } from "../version.js";
import type { AppEnv, ServerState } from "./context.js";
import { requiredScope } from "./access.js";
import { CompletionBody } from "./routes/completions.js";
import { KeyBody } from "./routes/keys.js";
import { MintBody, ResultBody } from "./routes/remote-methods.js";
import { ChatBody, CloseBody, CreateBody, PatchBody } from "./routes/sessions.js";
import { ScheduleBody, SchedulePatchBody } from "./routes/schedules.js";
import { ArmBody } from "./routes/wakeups.js";
import { ForkBody, RevertBody } from "./routes/checkpoints.js";

/**
 * `GET /openapi.json`: OpenAPI 3.1 for every route the app has registered. The paths come
 * from the Hono router itself and the request bodies are the very schemas the routes
 * validate with, so the document cannot drift from the server: a route added without an
 * entry below still appears (marked `x-veil-undocumented`, which a test refuses).
 */
export function openApiRoutes(app: Hono<AppEnv>, _state: ServerState): void {
  app.get("/openapi.json", (c) => c.json(openApiDocument(app.routes)));
}

type Method = "get" | "post" | "put" | "patch" | "delete";

interface Doc {
  summary: string;
  tag: string;
  /** JSON body schema (validated by the route with the same object). */
  body?: TSchema;
  /** The body may also be raw text/plain (memory files). */
  textBody?: boolean;
  /** The body is taken as raw bytes, whatever its type (signed webhooks). */
  rawBody?: string;
  /** Request headers the route reads, with what they carry. */
  headers?: Record<string, string>;
  query?: Record<string, string>;
  /** Answers text/event-stream. */
  sse?: boolean;
  /** Answers text/event-stream when the request asks for it (chat). */
  sseOptional?: boolean;
  status?: number;
  response?: TSchema | string;
  /** Reachable without the bearer secret. */
  public?: boolean;
  /** May be opened with ?token= from POST /stream-tokens instead of the secret. */
  streamToken?: boolean;
  /** Authenticated by X-Veil-Signature instead of the bearer secret. */
  signed?: boolean;
}

const ErrorSchema = Type.Object({
  error: Type.Object({ code: Type.String({ description: "stable code from the catalogue, e.g. SESSION_NOT_FOUND" }), message: Type.String(), details: Type.Optional(Type.Object({}, { additionalProperties: true })) }),
});

const TokenUsage = Type.Object({}, { additionalProperties: { type: "integer" }, description: "prompt_tokens, completion_tokens, total_tokens, cached_tokens, …" });

const SessionSchema = Type.Object(
  {
    id: Type.String(),
    title: Type.Union([Type.String(), Type.Null()], { description: "one line: given on create or PATCH, else made from the first message" }),
    agent: Type.String(),
    mode: Type.String(),
    status: Type.Union([Type.Literal("idle"), Type.Literal("running"), Type.Literal("suspended"), Type.Literal("closed")]),
    origin: Type.String({ description: "who started it: api (POST /sessions), run (veil run), openai (agent/<name> on the OpenAI wire), agent (a sub-agent)" }),
    ephemeral: Type.Boolean({ description: "a one-shot session nobody continued: closed once idle for limits.idleSessionTtl" }),
    parent_session_id: Type.Union([Type.String(), Type.Null()]),
    spawn_depth: Type.Integer(),
    model: Type.Union([Type.String(), Type.Null()]),
    context_size: Type.Integer(),
    context_window: Type.Integer({ description: "the window of the model the next turn would use (models.json, else the built-in catalogue, else 128000)" }),
    token_usage: TokenUsage,
    cost_usd: Type.Number({ description: "the session's spend in USD at models.json prices (0 when unpriced)" }),
    forked_from: Type.Union([Type.String(), Type.Null()], { description: "the session this one was forked from" }),
    created_at: Type.String({ format: "date-time" }),
    updated_at: Type.String({ format: "date-time" }),
  },
  { additionalProperties: true },
);

const FileChangeSchema = Type.Object({ path: Type.String(), change: Type.Union([Type.Literal("added"), Type.Literal("modified"), Type.Literal("deleted")]) });
const RevertAnswer = Type.Object({ messageId: Type.String(), files: Type.Array(FileChangeSchema) });

const ChatReply = Type.Object(
  {
    content: Type.Union([Type.String(), Type.Null()], { description: "the final answer (with an output_schema: its JSON text)" }),
    finishReason: Type.String(),
    stopReason: Type.String(),
    tokenUsage: TokenUsage,
    messageId: Type.Union([Type.String(), Type.Null()]),
    structured: Type.Optional(Type.Unknown({ description: "with an output_schema: the final answer's parsed value, valid against the schema" })),
  },
  { additionalProperties: true },
);

const EventSchema = Type.Object(
  { type: Type.String({ description: "chat.message, chat.chunk, thinking.chunk, tool.start, tool.end, chat.done, …" }), sessionId: Type.Optional(Type.String()), seq: Type.Optional(Type.Integer()) },
  { additionalProperties: true, description: "one SSE `data:` payload; see the README's events table" },
);

/** The JSON form of a memory body; raw text/plain works too (routes/memory.ts). */
const MemoryJsonBody = Type.Object({ content: Type.String() }, { additionalProperties: false });

const AnyObject = Type.Object({}, { additionalProperties: true });
const ListOf = (items: TSchema) => Type.Array(items);

const KeySchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    prefix: Type.String({ description: "the first characters of the key's value (the value itself is shown only by POST /keys)" }),
    scopes: ListOf(Type.String()),
    agents: Type.Union([ListOf(Type.String()), Type.Null()]),
    requestsPerMinute: Type.Union([Type.Integer(), Type.Null()]),
    budgetUsd: Type.Union([Type.Number(), Type.Null()]),
    spentUsd: Type.Number({ description: "what the key's sessions cost so far" }),
    expiresAt: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.String(),
    revokedAt: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: true },
);

const AuditEntry = Type.Object(
  { seq: Type.Integer(), at: Type.String(), key: Type.String({ description: "key id, or \"admin\" for the server secret" }), method: Type.String(), path: Type.String(), status: Type.Integer(), sessionId: Type.Optional(Type.String()) },
  { additionalProperties: false },
);

const SkillSchema = Type.Object(
  {
    name: Type.Union([Type.String(), Type.Null()], { description: "null for a broken folder" }),
    state: Type.Union([Type.Literal("active"), Type.Literal("shadowed"), Type.Literal("broken")]),
    scope: Type.Union([Type.Literal("agent"), Type.Literal("project"), Type.Literal("global")]),
    folder: Type.String(),
    file: Type.String({ description: "the folder's SKILL.md" }),
    description: Type.Optional(Type.String()),
    files: Type.Optional(Type.Array(Type.String(), { description: "the other files of the folder (absolute paths, at most 100)" })),
    shadowedBy: Type.Optional(Type.String({ description: "shadowed: the folder of the skill in effect" })),
    bytes: Type.Optional(Type.Integer()),
    truncated: Type.Optional(Type.Boolean({ description: "SKILL.md is over 256 KB: the skill tool returns its first 256 KB" })),
    error: Type.Optional(Type.String({ description: "broken: what is wrong, naming the field" })),
  },
  { additionalProperties: false },
);

const Nullable = (schema: TSchema) => Type.Union([schema, Type.Null()]);

const ScheduleSchema = Type.Object(
  {
    id: Type.String(),
    agent: Type.String(),
    prompt: Type.String(),
    cron: Nullable(Type.String()),
    everySeconds: Nullable(Type.Number()),
    session: Type.String({ description: '"new" or the session every run goes to' }),
    enabled: Type.Boolean(),
    nextRunAt: Nullable(Type.String({ format: "date-time", description: "null while disabled" })),
    createdAt: Type.String({ format: "date-time" }),
    updatedAt: Type.String({ format: "date-time" }),
    running: Nullable(Type.Object({ at: Type.String({ format: "date-time" }), sessionId: Nullable(Type.String()) })),
    ownerKey: Nullable(Type.String({ description: "the API key that made it (its runs' sessions are that key's); null: the server secret" })),
  },
  { additionalProperties: true },
);

const ScheduleRunSchema = Type.Object(
  {
    at: Type.String({ format: "date-time", description: "the due time" }),
    sessionId: Nullable(Type.String()),
    status: Type.Union([Type.Literal("ok"), Type.Literal("error"), Type.Literal("skipped")]),
    error: Type.Optional(Type.String()),
    startedAt: Nullable(Type.String({ format: "date-time", description: "when the run was taken (null: skipped)" })),
    finishedAt: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);

const DeliverySchema = Type.Object(
  {
    deliveryId: Type.String(),
    url: Type.String(),
    type: Type.String({ description: "chat.done, method.pending or session.budget" }),
    sessionId: Type.String(),
    status: Type.Union([Type.Literal("pending"), Type.Literal("delivered"), Type.Literal("failed")]),
    attempts: Type.Integer(),
    nextAttemptAt: Nullable(Type.String({ format: "date-time" })),
    lastStatus: Nullable(Type.Integer()),
    lastError: Nullable(Type.String()),
    createdAt: Type.String({ format: "date-time" }),
    deliveredAt: Nullable(Type.String({ format: "date-time" })),
  },
  { additionalProperties: true },
);
const SESSION_EVENTS_QUERY = { lastEventId: "replay stored events after this seq (same as the Last-Event-ID header)", token: "stream token (POST /stream-tokens), for EventSource" };

/** Summaries and schemas, keyed by `METHOD path` as Hono registers it. */
const DOCS: Record<string, Doc> = {
  "GET /health": {
    summary: "liveness, version, and whether bash and custom tools run sandboxed",
    tag: "server",
    public: true,
    response: Type.Object({
      ok: Type.Boolean(),
      version: Type.String(),
      sandbox: Type.Object({
        mode: Type.Union([Type.Literal("auto"), Type.Literal("required"), Type.Literal("off")]),
        active: Type.Boolean(),
        backend: Type.Union([Type.Literal("bubblewrap"), Type.Null()]),
      }),
    }),
  },
  "GET /openapi.json": { summary: "this document", tag: "server", response: AnyObject },
  "GET /metrics": {
    summary: "Prometheus metrics (text format 0.0.4): veil_turns_total, veil_tool_calls_total{tool,status}, veil_llm_tokens_total{kind}, veil_turn_duration_seconds, veil_sessions_live, veil_sse_clients, veil_provider_errors_total{code}",
    tag: "server",
    response: "text",
  },
  "GET /": { summary: "the web dashboard (HTML; asks for the secret, then uses this API)", tag: "dashboard", public: true },
  "GET /dashboard/app.js": { summary: "dashboard script", tag: "dashboard", public: true },
  "GET /dashboard/app.css": { summary: "dashboard styles", tag: "dashboard", public: true },
  "GET /dashboard/favicon.svg": { summary: "dashboard icon", tag: "dashboard", public: true },
  "GET /events": { summary: "live events of every session (SSE; id is the global gseq)", tag: "events", sse: true, streamToken: true, query: { session: "only this session's events", methods: "\"pending\": first a method.pending for each remote method pending when the stream opens", ...SESSION_EVENTS_QUERY } },
  "GET /agents": { summary: "agents visible in the workspace", tag: "agents", response: ListOf(AnyObject) },
  "GET /agents/:name": { summary: "one agent", tag: "agents", response: AnyObject },
  "GET /tools": { summary: "built-in and custom tools an agent sees, with tier, state and schema", tag: "agents", query: { agent: "agent name (default: default)", mode: "mode (default: chat)" }, response: ListOf(Type.Union([ToolListingSchema, BrokenToolListingSchema])) },
  "GET /skills": {
    summary: "skills an agent sees (SKILL.md folders): in effect, shadowed by a same-named one earlier in precedence (agent > project .veil/skills > project .claude/skills > $VEIL_HOME/skills), and broken ones with their error",
    tag: "agents",
    query: { agent: "agent name (default: default)" },
    response: ListOf(SkillSchema),
  },
  "POST /sessions": { summary: "create a session", tag: "sessions", body: CreateBody, status: 201, response: SessionSchema },
  "GET /sessions": {
    summary: "list sessions, most recently active first",
    tag: "sessions",
    query: { status: "idle | running | suspended | closed", parent: "only sub-agents of this session", q: "only sessions whose title, id, agent or instance name contains this text (any case)", order: "activity (default: most recently active first) | created (oldest first)", limit: "at most this many" },
    response: ListOf(SessionSchema),
  },
  "GET /sessions/:id": { summary: "one session", tag: "sessions", response: SessionSchema },
  "PATCH /sessions/:id": { summary: "set the title (null clears it); a session given a title is no longer ephemeral", tag: "sessions", body: PatchBody, response: SessionSchema },
  "DELETE /sessions/:id": { summary: "close a session (kills its shells, drops its timer, closes its sub-agents)", tag: "sessions", response: SessionSchema },
  "DELETE /sessions": {
    summary: "close several sessions, named in ids (comma-separated, at most 1000); unknown ids are listed in notFound",
    tag: "sessions",
    query: { ids: "the sessions to close: ID,ID,… (required)" },
    response: Type.Object({ closed: ListOf(SessionSchema), notFound: ListOf(Type.String()) }),
  },
  "POST /sessions/close": {
    summary: "close several sessions: those in ids, or every open top-level session idle for at least idle (\"7d\"); unknown ids are listed in notFound",
    tag: "sessions",
    body: CloseBody,
    response: Type.Object({ closed: ListOf(SessionSchema), notFound: ListOf(Type.String()) }),
  },
  "GET /sessions/:id/messages": { summary: "stored messages, oldest first", tag: "sessions", query: { after: "only messages after this seq", limit: "at most this many" }, response: ListOf(AnyObject) },
  "GET /sessions/:id/todos": { summary: "the session's todo list", tag: "sessions", response: ListOf(AnyObject) },
  "POST /sessions/:id/cancel": { summary: "cancel the running turn", tag: "sessions", response: AnyObject },
  "POST /sessions/:id/suspend": { summary: "suspend (chat refused with 409 until resumed)", tag: "sessions", response: AnyObject },
  "POST /sessions/:id/resume": { summary: "resume a suspended session", tag: "sessions", response: AnyObject },
  "POST /sessions/:id/compact": {
    summary: "compact the history now, both stages (a running session: at its next boundary); 409 on a closed session",
    tag: "sessions",
    response: Type.Object({ tokensBefore: Type.Integer(), tokensAfter: Type.Integer(), summaryMessageId: Type.Union([Type.String(), Type.Null()]) }),
  },
  "POST /sessions/:id/chat": { summary: "send a message and run a turn; SSE of the turn's events with stream: true or Accept: text/event-stream", tag: "sessions", headers: { traceparent: "W3C trace context: the turn's invoke_agent span becomes a child of this span (traces on)" }, body: ChatBody, sseOptional: true, response: ChatReply },
  "GET /sessions/:id/events": {
    summary: "live events of one session (SSE; id is seq); Last-Event-ID replays; with follow=false the stored events as a JSON array (paging history)",
    tag: "events",
    sse: true,
    streamToken: true,
    query: { ...SESSION_EVENTS_QUERY, follow: "false: answer the stored events after `after` as JSON and end", after: "with follow=false: events after this seq (default 0)", limit: "with follow=false: at most this many (default 1000, max 10000)" },
    response: ListOf(EventSchema),
  },
  "GET /sessions/:id/checkpoints": {
    summary: "the turns that changed files (not reverted, oldest first) and the revert an unrevert would undo",
    tag: "checkpoints",
    response: Type.Object({ checkpoints: ListOf(Type.Object({ id: Type.String(), messageId: Type.String(), createdAt: Type.String({ format: "date-time" }), files: ListOf(FileChangeSchema) })), revert: Type.Union([RevertAnswer, Type.Null()]), reverted: Type.Array(Type.String(), { description: "the user messages whose turns are reverted (their rows stay, flagged)" }) }),
  },
  "POST /sessions/:id/revert": { summary: "put back every file the turns from messageId on changed, and take those turns out of the model's history (409 SESSION_BUSY while running)", tag: "checkpoints", body: RevertBody, response: RevertAnswer },
  "POST /sessions/:id/unrevert": { summary: "undo the last revert while no message came since (else 409 CONFLICT)", tag: "checkpoints", response: RevertAnswer },
  "POST /sessions/:id/fork": { summary: "a new session with this one's agent, model and mode and a copy of its history up to and including the turn of messageId (default: all); 201", tag: "checkpoints", body: ForkBody, status: 201, response: SessionSchema },
  "GET /sessions/:id/wakeup": { summary: "the wake-up schedule", tag: "wake-ups", response: AnyObject },
  "POST /sessions/:id/wakeup": { summary: "arm (or with time \"0\" cancel) the wake-up", tag: "wake-ups", body: ArmBody, response: AnyObject },
  "DELETE /sessions/:id/wakeup": { summary: "cancel the wake-up", tag: "wake-ups", response: AnyObject },
  "POST /schedules": { summary: "create a schedule: a prompt that runs by cron (five fields, UTC) or every N seconds", tag: "schedules", body: ScheduleBody, status: 201, response: ScheduleSchema },
  "GET /schedules": { summary: "every schedule", tag: "schedules", response: Type.Object({ schedules: ListOf(ScheduleSchema) }) },
  "GET /schedules/:id": { summary: "one schedule", tag: "schedules", response: ScheduleSchema },
  "PATCH /schedules/:id": { summary: "enable or disable a schedule (enabling starts from now: missed times do not fire)", tag: "schedules", body: SchedulePatchBody, response: ScheduleSchema },
  "DELETE /schedules/:id": { summary: "delete a schedule and its runs", tag: "schedules", response: Type.Object({ ok: Type.Boolean(), id: Type.String() }) },
  "GET /schedules/:id/runs": { summary: "the schedule's runs, newest first (ok, error, or skipped while the previous run still went)", tag: "schedules", query: { limit: "at most this many (default 100, max 1000)" }, response: Type.Object({ runs: ListOf(ScheduleRunSchema) }) },
  "POST /webhooks/:name": {
    summary: "an inbound webhook of settings.webhooks.in: starts a session of its agent with its prompt ({{body}} = the raw body); no bearer, the signature authenticates",
    tag: "webhooks",
    signed: true,
    rawBody: "the raw body, exactly as signed; at most limits.maxBodyBytes",
    headers: { "X-Veil-Signature": "sha256=<hex HMAC-SHA256 of the raw body with the webhook's secret> (required)", "X-Veil-Delivery": "the sender's delivery id: a repeat answers the first delivery's sessionId and runs nothing" },
    status: 202,
    response: Type.Object({ sessionId: Type.String(), duplicate: Type.Optional(Type.Boolean()) }),
  },
  "GET /webhooks/deliveries": { summary: "outbound webhook deliveries (settings.webhooks.out), newest first, with status and attempts", tag: "webhooks", query: { status: "pending | delivered | failed", limit: "at most this many (default 100, max 1000)" }, response: Type.Object({ deliveries: ListOf(DeliverySchema) }) },
  "GET /memory/:file": { summary: "read a global memory file (text, or JSON with Accept: application/json)", tag: "memory", response: "text" },
  "PUT /memory/:file": { summary: "overwrite a global memory file", tag: "memory", body: MemoryJsonBody, textBody: true, response: AnyObject },
  "GET /agents/:name/memory/:file": { summary: "read an agent's memory file", tag: "memory", response: "text" },
  "PUT /agents/:name/memory/:file": { summary: "overwrite an agent's memory file", tag: "memory", body: MemoryJsonBody, textBody: true, response: AnyObject },
  "POST /completions": { summary: "OpenAI chat completions through the provider fallback chain; model agent/<name>[/<sessionId>] runs that agent (session id in x-veil-session)", tag: "openai", body: CompletionBody, sseOptional: true, response: AnyObject },
  "POST /v1/chat/completions": { summary: "OpenAI chat completions (the openai SDKs' baseURL is http://HOST:PORT/v1); model agent/<name> runs that agent's loop in a new session, agent/<name>/<sessionId> continues one (session id in x-veil-session)", tag: "openai", headers: { traceparent: "W3C trace context: the turn's invoke_agent span becomes a child of this span (traces on)" }, body: CompletionBody, sseOptional: true, response: AnyObject },
  "GET /v1/models": { summary: "OpenAI model list: configured models and agent/<name>", tag: "openai", response: Type.Object({ object: Type.Literal("list"), data: ListOf(AnyObject) }) },
  "GET /v1/models/:id{.+}": { summary: "one model of the list", tag: "openai", response: AnyObject },
  "GET /remote-methods": { summary: "pending remote methods, then live method.pending / method.done (SSE)", tag: "remote methods", sse: true, streamToken: true },
  "GET /remote-methods/pending": { summary: "ids of pending remote methods", tag: "remote methods", response: Type.Object({ pending: ListOf(Type.String()) }) },
  "POST /remote-methods/:id/result": { summary: "answer a remote method (409 { error: \"not_found\" } when unknown or answered)", tag: "remote methods", body: ResultBody, response: AnyObject },
  "POST /stream-tokens": { summary: "mint a token for EventSource URLs (opens streams for 60 s; each stream it opened may reconnect for 24 h)", tag: "events", body: MintBody, response: Type.Object({ token: Type.String(), expiresAt: Type.String(), path: Type.Optional(Type.String()) }) },
  "DELETE /stream-tokens/:token": { summary: "revoke one stream token", tag: "events", response: Type.Object({ revoked: Type.Boolean() }) },
  "DELETE /stream-tokens": { summary: "revoke every stream token (log-out); a key revokes only its own", tag: "events", response: Type.Object({ revoked: Type.Integer() }) },
  "POST /keys": { summary: "create an API key; its value (`key`, veil_sk_…) is in this answer only", tag: "keys", body: KeyBody, status: 201, response: Type.Object({ key: Type.String() }, { additionalProperties: true }) },
  "GET /keys": { summary: "every key (revoked ones too) with its spend, never its value", tag: "keys", response: Type.Object({ keys: ListOf(KeySchema) }) },
  "GET /keys/:id": { summary: "one key with its spend", tag: "keys", response: KeySchema },
  "DELETE /keys/:id": { summary: "revoke a key (at once here, within a second on every node)", tag: "keys", response: KeySchema },
  "GET /audit": { summary: "every request that changed something (or tried to), oldest first", tag: "keys", query: { after: "entries with seq above this", limit: "at most this many (default 100, at most 1000)" }, response: Type.Object({ entries: ListOf(AuditEntry) }) },
};

const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"]);

/** Error answers every operation may give, by status (each code has one status: src/errors.ts). */
const ERROR_STATUSES: Record<string, string> = {
  "400": "VALIDATION_ERROR / INVALID_JSON / CONFIG_ERROR / HOOK_BLOCKED / CONTEXT_OVERFLOW",
  "401": "UNAUTHORIZED: missing, wrong, revoked or expired bearer secret / API key (or stream token)",
  "403": "FORBIDDEN: foreign Origin or Host, a scope the key lacks, or an agent outside its `agents`",
  "404": "*_NOT_FOUND",
  "402": "BUDGET_EXCEEDED",
  "409": "SESSION_CLOSED / SESSION_SUSPENDED / SESSION_BUSY / CANCELLED / not_found",
  "413": "PAYLOAD_TOO_LARGE",
  "429": "TOO_MANY_SESSIONS: limits.maxLiveSessions reached; RATE_LIMITED: the key's requestsPerMinute (Retry-After in seconds)",
  "500": "INTERNAL_ERROR",
  "502": "LLM_ERROR / PROVIDER_ERROR: the provider failed or refused (its 401/403/429 included), the message naming it and its status; REPLAY_MISMATCH: under VEIL_REPLAY, the request is not the recorded one",
  "504": "TIMEOUT",
};

export function openApiDocument(routes: readonly { method: string; path: string }[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const seen = new Set<string>();
  for (const route of routes) {
    const key = `${route.method} ${route.path}`;
    if (!METHODS.has(route.method) || seen.has(key)) continue;
    seen.add(key);
    const { path, parameters } = openApiPath(route.path);
    paths[path] ??= {};
    paths[path]![route.method.toLowerCase() as Method] = operation(route.method, route.path, DOCS[key], parameters);
  }
  return {
    openapi: "3.1.0",
    info: { title: "Veil", version: VERSION, description: "Headless LLM agent runtime: sessions, chat, live events (SSE), tools, memory, wake-ups, schedules, webhooks, remote methods, and an OpenAI-compatible wire." },
    servers: [{ url: "/" }],
    security: [{ bearer: [] }],
    tags: [...new Set(Object.values(DOCS).map((d) => d.tag))].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "the server secret (`veil serve` prints it once; stored in .veil/secret: the admin), or an API key (veil_sk_…) from POST /keys; `x-veil-scope` says which scope an operation needs" },
        streamToken: { type: "apiKey", in: "query", name: "token", description: "from POST /stream-tokens, for EventSource (which cannot send headers)" },
        webhookSignature: { type: "apiKey", in: "header", name: "X-Veil-Signature", description: "sha256=<hex HMAC-SHA256 of the raw body with the secret in the webhook's secretEnv>" },
      },
      schemas: { Error: ErrorSchema, Session: SessionSchema, ChatReply, Event: EventSchema, Tool: ToolListingSchema, BrokenTool: BrokenToolListingSchema, Schedule: ScheduleSchema, ScheduleRun: ScheduleRunSchema, WebhookDelivery: DeliverySchema },
    },
  };
}

/** `/sessions/:id` → `/sessions/{id}` and its path parameters (Hono's `:id{regex}` included). */
function openApiPath(honoPath: string): { path: string; parameters: object[] } {
  const parameters: object[] = [];
  const path = honoPath.replace(/:([A-Za-z_]+)(\{[^}]*\})?/g, (_match, name: string) => {
    parameters.push({ name, in: "path", required: true, schema: { type: "string" } });
    return `{${name}}`;
  });
  return { path, parameters };
}

function operation(method: string, honoPath: string, doc: Doc | undefined, pathParameters: object[]): Record<string, unknown> {
  const parameters = [...pathParameters, ...Object.entries(doc?.query ?? {}).map(([name, description]) => ({ name, in: "query", required: false, description, schema: { type: "string" } }))];
  if (doc?.sse) parameters.push({ name: "Last-Event-ID", in: "header", required: false, description: "replay what was missed after this id", schema: { type: "string" } });
  for (const [name, description] of Object.entries(doc?.headers ?? {})) parameters.push({ name, in: "header", required: description.includes("(required)"), description, schema: { type: "string" } });
  const op: Record<string, unknown> = {
    operationId: `${method.toLowerCase()}${honoPath.replace(/\{[^}]*\}/g, "").replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ""))}`,
    summary: doc?.summary ?? `${method} ${honoPath}`,
    tags: [doc?.tag ?? "other"],
    ...(doc?.public ? {} : { "x-veil-scope": requiredScope(method, honoPath.replace(/:([A-Za-z_]+)(\{[^}]*\})?/g, "x")) }),
    ...(parameters.length ? { parameters } : {}),
    responses: responses(doc),
  };
  if (!doc) op["x-veil-undocumented"] = true;
  if (doc?.public) op.security = [];
  else if (doc?.signed) op.security = [{ webhookSignature: [] }];
  else if (doc?.streamToken) op.security = [{ bearer: [] }, { streamToken: [] }];
  if (doc?.body) {
    const content: Record<string, unknown> = { "application/json": { schema: doc.body } };
    if (doc.textBody) content["text/plain"] = { schema: { type: "string" } };
    op.requestBody = { required: !doc.textBody, content };
  }
  if (doc?.rawBody) op.requestBody = { required: true, description: doc.rawBody, content: { "*/*": { schema: { type: "string", format: "binary" } } } };
  return op;
}

function responses(doc: Doc | undefined): Record<string, unknown> {
  const content: Record<string, unknown> = {};
  if (doc?.sse || doc?.sseOptional) content["text/event-stream"] = { schema: { type: "string", description: "`id: N` + `data: <Event JSON>` messages (#/components/schemas/Event) and `: keepalive` comments" } };
  if (!doc?.sse || doc.response !== undefined) {
    if (doc?.response === "text") content["text/plain"] = { schema: { type: "string" } };
    else content["application/json"] = { schema: doc?.response ?? {} };
  }
  const out: Record<string, unknown> = { [String(doc?.status ?? 200)]: { description: doc?.summary ?? "success", content } };
  for (const [status, description] of Object.entries(ERROR_STATUSES)) {
    if (status === "401" && doc?.public) continue;
    if (status === "401" && doc?.signed) {
      out[status] = { description: "UNAUTHORIZED: missing or wrong X-Veil-Signature", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } };
      continue;
    }
    out[status] = { description, content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } };
  }
  return out;
}

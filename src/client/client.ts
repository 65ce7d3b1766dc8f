import { parseSse } from "./sse.js";
import type {
  Agent,
  ApiKey,
  AuditEntry,
  CreateKey,
  ChatOptions,
  ChatReply,
  Checkpoints,
  CloseManyResult,
  CompactionResult,
  CreateSchedule,
  CreateSession,
  EventStreamOptions,
  Health,
  Message,
  Schedule,
  ScheduleRun,
  RevertResult,
  Session,
  SessionListFilter,
  Skill,
  StreamToken,
  Tool,
  VeilEvent,
  Wakeup,
  WebhookDelivery,
} from "./types.js";

export interface VeilClientOptions {
  /** e.g. "http://127.0.0.1:7700" (a trailing slash is fine). */
  baseUrl: string;
  /** The server secret (`veil serve` prints it once; stored in `.veil/secret`), or an API key (`veil_sk_…`). */
  secret: string;
  /** default: globalThis.fetch */
  fetch?: typeof fetch;
}

/** A non-2xx answer: the server's `{ error: { code, message } }` with its HTTP status. */
export class VeilApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    /** The whole JSON answer: a failed chat's reply (its `content`, `stopReason`…) beside its error. */
    readonly body?: unknown,
  ) {
    super(`${code}: ${message}`);
    this.name = "VeilApiError";
  }
}

/** Statuses after which reconnecting cannot help (a bad secret, an unknown session…). */
const FINAL_STATUSES = new Set([400, 401, 403, 404, 409]);

/**
 * A typed client of Veil's HTTP API for browsers and Node (fetch only, no server code).
 *
 * @example
 * const veil = new VeilClient({ baseUrl: "http://127.0.0.1:7700", secret });
 * const session = await veil.sessions.create({ agent: "default" });
 * for await (const event of veil.chatStream(session.id, "list the files here")) {
 *   if (event.type === "chat.chunk") process.stdout.write(event.content);
 * }
 */
export class VeilClient {
  private readonly baseUrl: string;
  private readonly secret: string;
  private readonly fetchImpl: typeof fetch;

  constructor(options: VeilClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.secret = options.secret;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  health(): Promise<Health> {
    return this.json("GET", "/health");
  }

  readonly agents = {
    list: (): Promise<Agent[]> => this.json("GET", "/agents"),
    get: (name: string): Promise<Agent> => this.json("GET", `/agents/${enc(name)}`),
  };

  /** Tools an agent sees (`GET /tools`). */
  tools(agent = "default"): Promise<Tool[]> {
    return this.json("GET", `/tools?agent=${enc(agent)}`);
  }

  /** Skills an agent sees (`GET /skills`): in effect, shadowed, then broken folders with their error. */
  skills(agent = "default"): Promise<Skill[]> {
    return this.json("GET", `/skills?agent=${enc(agent)}`);
  }

  readonly sessions = {
    create: (input: CreateSession = {}): Promise<Session> => this.json("POST", "/sessions", input),
    /** Most recently active first (`order: "created"`: oldest first); `q` searches titles, ids, agents and instance names. */
    list: (filter: SessionListFilter = {}): Promise<Session[]> => this.json("GET", `/sessions${query({ ...filter })}`),
    get: (id: string): Promise<Session> => this.json("GET", `/sessions/${enc(id)}`),
    /** Sets the title (`null` clears it); a session given a title is no longer ephemeral. */
    rename: (id: string, title: string | null): Promise<Session> => this.json("PATCH", `/sessions/${enc(id)}`, { title }),
    close: (id: string): Promise<Session> => this.json("DELETE", `/sessions/${enc(id)}`),
    /** Closes several sessions (`POST /sessions/close`): ids that name none come back in `notFound`. */
    closeMany: (ids: readonly string[]): Promise<CloseManyResult> => this.json("POST", "/sessions/close", { ids }),
    /** Closes every open top-level session with no activity for `idle` ("7d", "24h", …). */
    prune: (idle: string): Promise<CloseManyResult> => this.json("POST", "/sessions/close", { idle }),
    cancel: (id: string): Promise<{ ok: true; cancelled: boolean; session: Session }> => this.json("POST", `/sessions/${enc(id)}/cancel`),
    suspend: (id: string): Promise<{ ok: true; session: Session }> => this.json("POST", `/sessions/${enc(id)}/suspend`),
    resume: (id: string): Promise<{ ok: true; session: Session }> => this.json("POST", `/sessions/${enc(id)}/resume`),
    /** Compacts the history now (a running session at its next boundary); a closed session fails with 409. */
    compact: (id: string): Promise<CompactionResult> => this.json("POST", `/sessions/${enc(id)}/compact`),
    messages: (id: string, page: { after?: number; limit?: number } = {}): Promise<Message[]> => this.json("GET", `/sessions/${enc(id)}/messages${query(page)}`),
    /** Stored events of a session as a page (`follow=false`), oldest first: for UIs that load history. */
    history: (id: string, page: { after?: number; limit?: number } = {}): Promise<VeilEvent[]> =>
      this.json("GET", `/sessions/${enc(id)}/events${query({ follow: "false", ...page })}`),
    todos: (id: string): Promise<{ id: string; content: string; status: string; priority?: string }[]> => this.json("GET", `/sessions/${enc(id)}/todos`),
    /** The turns that changed files, and the revert an unrevert would undo. */
    checkpoints: (id: string): Promise<Checkpoints> => this.json("GET", `/sessions/${enc(id)}/checkpoints`),
    /** Puts the files the turns from `messageId` on changed back and takes those turns out of the model's history; 409 while the session runs. */
    revert: (id: string, messageId: string): Promise<RevertResult> => this.json("POST", `/sessions/${enc(id)}/revert`, { messageId }),
    /** Undoes the last revert while no message came since; else 409. */
    unrevert: (id: string): Promise<RevertResult> => this.json("POST", `/sessions/${enc(id)}/unrevert`),
    /** A new session with a copy of this one's history up to and including the turn of `messageId` (default: all). */
    fork: (id: string, messageId?: string): Promise<Session> => this.json("POST", `/sessions/${enc(id)}/fork`, messageId === undefined ? {} : { messageId }),
  };

  /**
   * Sends a message and waits for the turn's reply. A failed turn rejects with VeilApiError
   * (e.g. 502 LLM_ERROR). With `output_schema`, `structured` is the answer's parsed value,
   * typed as `T`: `await veil.chat<{ city: string }>(id, "…", { output_schema })`.
   */
  chat<T = unknown>(sessionId: string, message: string, options: ChatOptions = {}): Promise<ChatReply<T>> {
    const { signal, traceparent, ...rest } = options;
    return this.json("POST", `/sessions/${enc(sessionId)}/chat`, { message, ...rest }, signal, traceHeaders(traceparent));
  }

  /** Sends a message and yields the turn's events as they happen, ending with `chat.done`. */
  async *chatStream(sessionId: string, message: string, options: ChatOptions = {}): AsyncGenerator<VeilEvent> {
    const { signal, traceparent, ...rest } = options;
    const res = await this.request("POST", `/sessions/${enc(sessionId)}/chat`, { message, ...rest, stream: true }, signal, "text/event-stream", traceHeaders(traceparent));
    for await (const sse of parseSse(res.body!, signal)) {
      const event = JSON.parse(sse.data) as VeilEvent;
      yield event;
      if (event.type === "chat.done") return;
    }
  }

  /**
   * Live events (`GET /sessions/:id/events` with `session`, else `GET /events`), replaying
   * from `lastEventId`. When the connection drops it reconnects with `Last-Event-ID` set to
   * the last id seen, so nothing stored is missed or repeated. Ends when `signal` aborts or
   * the loop breaks; a 4xx answer (bad secret, unknown session) rejects with VeilApiError.
   */
  async *events(options: EventStreamOptions = {}): AsyncGenerator<VeilEvent> {
    const path = options.session ? `/sessions/${enc(options.session)}/events` : "/events";
    let lastId = options.lastEventId;
    let delay = options.retryMs ?? 250;
    const maxDelay = options.maxRetryMs ?? 5000;
    while (!options.signal?.aborted) {
      let res: Response | undefined;
      try {
        res = await this.request("GET", path, undefined, options.signal, "text/event-stream", lastId === undefined ? {} : { "last-event-id": String(lastId) });
        delay = options.retryMs ?? 250;
        for await (const sse of parseSse(res.body!, options.signal)) {
          if (sse.id !== undefined && /^\d+$/.test(sse.id)) lastId = Number(sse.id);
          yield JSON.parse(sse.data) as VeilEvent;
        }
      } catch (error) {
        if (options.signal?.aborted) return;
        if (error instanceof VeilApiError && FINAL_STATUSES.has(error.status)) throw error;
      }
      // The stream ended or failed: wait, then reconnect from the last id seen.
      if (!(await sleep(delay, options.signal))) return;
      delay = Math.min(delay * 2, maxDelay);
    }
  }

  readonly remoteMethods = {
    pending: async (): Promise<string[]> => (await this.json<{ pending: string[] }>("GET", "/remote-methods/pending")).pending,
    /** Answers a pending method; false when it is unknown, already answered or timed out (409). */
    answer: async (id: string, result: unknown): Promise<boolean> => {
      try {
        await this.json("POST", `/remote-methods/${enc(id)}/result`, { result });
        return true;
      } catch (error) {
        if (error instanceof VeilApiError && error.status === 409) return false;
        throw error;
      }
    },
    /** Pending methods first, then live `method.pending` / `method.done` events (no reconnect). */
    stream: async function* (this: VeilClient, signal?: AbortSignal): AsyncGenerator<VeilEvent> {
      const res = await this.request("GET", "/remote-methods", undefined, signal, "text/event-stream");
      for await (const sse of parseSse(res.body!, signal)) yield JSON.parse(sse.data) as VeilEvent;
    }.bind(this),
  };

  readonly memory = {
    /** A memory file's text, or null when it does not exist; `agent` reads that agent's file. */
    read: async (file: string, options: { agent?: string } = {}): Promise<string | null> => {
      try {
        const res = await this.request("GET", memoryPath(file, options.agent), undefined, undefined, "text/plain");
        return await res.text();
      } catch (error) {
        if (error instanceof VeilApiError && error.status === 404) return null;
        throw error;
      }
    },
    /** Overwrites a memory file (atomic, literal). */
    write: (file: string, content: string, options: { agent?: string } = {}): Promise<{ ok: true; bytes: number }> =>
      this.json("PUT", memoryPath(file, options.agent), { content }),
  };

  readonly wakeups = {
    get: async (sessionId: string): Promise<Wakeup | null> => (await this.json<{ wakeup: Wakeup | null }>("GET", `/sessions/${enc(sessionId)}/wakeup`)).wakeup,
    set: async (sessionId: string, wakeup: { time: string | number; message?: string; loop?: boolean }): Promise<Wakeup | null> =>
      (await this.json<{ wakeup: Wakeup | null }>("POST", `/sessions/${enc(sessionId)}/wakeup`, wakeup)).wakeup,
    cancel: async (sessionId: string): Promise<boolean> => (await this.json<{ removed: boolean }>("DELETE", `/sessions/${enc(sessionId)}/wakeup`)).removed,
  };

  /** Prompts that run on their own, by cron (UTC) or every N seconds. */
  readonly schedules = {
    create: (input: CreateSchedule): Promise<Schedule> => this.json("POST", "/schedules", input),
    list: async (): Promise<Schedule[]> => (await this.json<{ schedules: Schedule[] }>("GET", "/schedules")).schedules,
    get: (id: string): Promise<Schedule> => this.json("GET", `/schedules/${enc(id)}`),
    /** Enabling starts from now: times missed while disabled do not fire. */
    setEnabled: (id: string, enabled: boolean): Promise<Schedule> => this.json("PATCH", `/schedules/${enc(id)}`, { enabled }),
    delete: async (id: string): Promise<void> => void (await this.json("DELETE", `/schedules/${enc(id)}`)),
    /** Newest first. */
    runs: async (id: string, options: { limit?: number } = {}): Promise<ScheduleRun[]> =>
      (await this.json<{ runs: ScheduleRun[] }>("GET", `/schedules/${enc(id)}/runs${query(options)}`)).runs,
  };

  readonly webhooks = {
    /** Outbound deliveries (settings.webhooks.out), newest first. */
    deliveries: async (filter: { status?: WebhookDelivery["status"]; limit?: number } = {}): Promise<WebhookDelivery[]> =>
      (await this.json<{ deliveries: WebhookDelivery[] }>("GET", `/webhooks/deliveries${query(filter)}`)).deliveries,
  };
  /** API keys (admin only): the value of a new key is in `create`'s answer only. */
  readonly keys = {
    create: (key: CreateKey): Promise<ApiKey & { key: string }> => this.json("POST", "/keys", key),
    list: async (): Promise<ApiKey[]> => (await this.json<{ keys: ApiKey[] }>("GET", "/keys")).keys,
    get: (id: string): Promise<ApiKey> => this.json("GET", `/keys/${enc(id)}`),
    /** Revokes at once (every node within a second); the key with its `revokedAt`. */
    revoke: (id: string): Promise<ApiKey> => this.json("DELETE", `/keys/${enc(id)}`),
  };

  /** Every request that changed something, oldest first, after `after` (a seq); admin only. */
  async audit(options: { after?: number; limit?: number } = {}): Promise<AuditEntry[]> {
    return (await this.json<{ entries: AuditEntry[] }>("GET", `/audit${query(options)}`)).entries;
  }

  /** A token for a browser EventSource URL (`?token=`): opens a stream within 60 s; that stream may reconnect for 24 h. */
  streamToken(path?: string): Promise<StreamToken> {
    return this.json("POST", "/stream-tokens", path ? { path } : {});
  }

  /** Revokes one stream token, or every one when no token is given. */
  revokeStreamTokens(token?: string): Promise<{ revoked: boolean | number }> {
    return this.json("DELETE", token ? `/stream-tokens/${enc(token)}` : "/stream-tokens");
  }

  /** `GET /metrics`: the server's Prometheus text (turns, tool calls, tokens, durations, sessions, SSE clients, provider errors). */
  async metrics(): Promise<string> {
    return (await this.request("GET", "/metrics", undefined, undefined, "text/plain")).text();
  }

  private async json<T>(method: string, path: string, body?: unknown, signal?: AbortSignal, headers?: Record<string, string>): Promise<T> {
    const res = await this.request(method, path, body, signal, "application/json", headers);
    return (await res.json()) as T;
  }

  private async request(method: string, path: string, body: unknown, signal: AbortSignal | undefined, accept: string, headers: Record<string, string> = {}): Promise<Response> {
    const res = await this.fetchImpl(`${this.baseUrl}${path}`, {
      method,
      signal,
      headers: { authorization: `Bearer ${this.secret}`, accept, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw await apiError(res);
    return res;
  }
}

async function apiError(res: Response): Promise<VeilApiError> {
  const text = await res.text().catch(() => "");
  try {
    const parsed = JSON.parse(text) as { error?: { code?: string; message?: string; details?: unknown } | string };
    if (typeof parsed.error === "string") return new VeilApiError(res.status, parsed.error, parsed.error);
    if (parsed.error?.code) return new VeilApiError(res.status, parsed.error.code, parsed.error.message ?? "", parsed.error.details, parsed);
  } catch {
    // not JSON: fall through
  }
  return new VeilApiError(res.status, `HTTP_${res.status}`, text.slice(0, 200) || res.statusText);
}

function traceHeaders(traceparent: string | undefined): Record<string, string> {
  return traceparent ? { traceparent } : {};
}

function enc(part: string): string {
  return encodeURIComponent(part);
}

function query(params: Record<string, string | number | undefined>): string {
  const entries = Object.entries(params).filter((entry): entry is [string, string | number] => entry[1] !== undefined);
  return entries.length ? `?${new URLSearchParams(entries.map(([k, v]): [string, string] => [k, String(v)])).toString()}` : "";
}

function memoryPath(file: string, agent?: string): string {
  return agent ? `/agents/${enc(agent)}/memory/${enc(file)}` : `/memory/${enc(file)}`;
}

/** Resolves true after `ms`, or false at once when `signal` aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

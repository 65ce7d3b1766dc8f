/**
 * A fake OpenAI-compatible LLM: a real HTTP server on 127.0.0.1 (port 0) that answers
 * `POST /v1/chat/completions` with scripted replies, streamed as SSE the way real
 * providers stream them (`data: {chat.completion.chunk}` lines, usage chunk, `data: [DONE]`).
 *
 * ```ts
 * const llm = await startFakeLlm();
 * llm.enqueue(reply().thinking("hmm").tool("read_file", { file: "/x" }).stop());
 * llm.enqueue(httpError(429, { retryAfter: "1" }));
 * llm.respond((req) => reply().text(`echo ${req.body.model}`).stop());
 *
 * const small = await startFakeLlm({ contextLimit: 4000, promptCache: true });
 * // prompts over 4000 tokens (JSON of the messages / 4) get OpenAI's 400 context_length_exceeded;
 * // usage reports the prefix shared with the previous request as prompt_tokens_details.cached_tokens
 * const strict = await startFakeLlm({ strictToolArguments: true });
 * // 400 to a request whose history has tool-call arguments that are not a JSON object
 * ...
 * await llm.close();
 * ```
 *
 * Deliberately independent of src/llm (it must not share bugs with the code it tests).
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import { readFileSync } from "node:fs";
import type { AddressInfo, Socket } from "node:net";
import { defaultSettings } from "../../src/config/defaults.js";
import type { Settings } from "../../src/config/types.js";

export interface FakeUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  cached_tokens?: number;
  cache_write_tokens?: number;
  reasoning_tokens?: number;
}

export interface FakeRequest {
  /** Parsed JSON body (undefined when the body was not JSON). */
  body: any;
  /** With keepRawBodies: the body exactly as it arrived (UTF-8), the bytes a provider sees and caches. */
  rawBody?: string;
  headers: IncomingHttpHeaders;
  path: string;
  method: string;
  /** Date.now() when the request arrived. */
  time: number;
}

type Step =
  | { kind: "text"; text: string }
  | { kind: "thinking"; text: string }
  | { kind: "tool"; id: string; name: string; args: string; fragments: number }
  | { kind: "wait"; promise: Promise<unknown> }
  | { kind: "raw"; data: string };

export interface StreamReply {
  kind: "stream";
  steps: Step[];
  /** null when the reply ends with reset(). */
  finishReason: string | null;
  usage?: FakeUsage;
  reasoningField: string;
  /** Destroy the socket after the steps instead of finishing. */
  reset: boolean;
  /** Send the [DONE] line (default true). */
  done: boolean;
  /** Send only the raw steps: no role chunk, finish chunk, usage chunk or [DONE] (see replay()). */
  rawOnly?: boolean;
  /** Headers at once, then no body byte until this settles (see ReplyBuilder.stallBody). */
  bodyAfter?: Promise<unknown>;
}

export interface ErrorReply {
  kind: "http-error";
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

export interface HangReply {
  kind: "hang";
}

export type FakeReply = StreamReply | ErrorReply | HangReply;

/** Fluent builder of one streamed (or JSON) assistant reply. */
export class ReplyBuilder {
  private readonly steps: Step[] = [];
  private usageValue?: FakeUsage;
  private field = "reasoning_content";
  private toolCount = 0;
  private finishOverride?: string;
  private sendDone = true;
  private stall?: Promise<unknown>;

  /** A text delta (one chunk per call). */
  text(text: string): this {
    this.steps.push({ kind: "text", text });
    return this;
  }

  /** A reasoning delta, sent as `reasoning_content` (or the field set by reasoningField). */
  thinking(text: string): this {
    this.steps.push({ kind: "thinking", text });
    return this;
  }

  /** Use `reasoning` (OpenRouter style) instead of `reasoning_content` for thinking deltas. */
  reasoningField(name: string): this {
    this.field = name;
    return this;
  }

  /**
   * A tool call. The first chunk carries id + name, later chunks only argument fragments
   * (split into `fragments` pieces, default 3), keyed by `index` like real providers.
   */
  tool(name: string, input: unknown, options: { id?: string; fragments?: number } = {}): this {
    return this.rawToolCall(name, JSON.stringify(input), options);
  }

  /** A tool call whose arguments are sent verbatim (e.g. malformed JSON). */
  rawToolCall(name: string, args: string, options: { id?: string; fragments?: number } = {}): this {
    const n = this.toolCount++;
    this.steps.push({ kind: "tool", id: options.id ?? `call_${n}_${name}`, name, args, fragments: options.fragments ?? 3 });
    return this;
  }

  /** A raw SSE data payload (sent as `data: <payload>`), for provider quirks. */
  raw(data: string | object): this {
    this.steps.push({ kind: "raw", data: typeof data === "string" ? data : JSON.stringify(data) });
    return this;
  }

  /** Pause the stream here until the promise settles. */
  waitFor(promise: Promise<unknown>): this {
    this.steps.push({ kind: "wait", promise });
    return this;
  }

  usage(usage: FakeUsage): this {
    this.usageValue = usage;
    return this;
  }

  /** Force a finish_reason (default: tool_calls when tools are present, else stop). */
  finish(reason: string): this {
    this.finishOverride = reason;
    return this;
  }

  /**
   * Send the headers at once and the body (from its first chunk on) only once `promise`
   * settles: a server that answers with headers before the model's prefill is done.
   */
  stallBody(promise: Promise<unknown>): this {
    this.stall = promise;
    return this;
  }

  /** Omit the final `data: [DONE]` line (some providers do). */
  noDone(): this {
    this.sendDone = false;
    return this;
  }

  /** Finish the reply normally. */
  stop(): StreamReply {
    const finish = this.finishOverride ?? (this.toolCount > 0 ? "tool_calls" : "stop");
    return this.build(finish, false);
  }

  /** Destroy the connection after the steps so far (a mid-stream reset). */
  reset(): StreamReply {
    return this.build(null, true);
  }

  private build(finishReason: string | null, reset: boolean): StreamReply {
    return {
      kind: "stream",
      steps: [...this.steps],
      finishReason,
      usage: this.usageValue,
      reasoningField: this.field,
      reset,
      done: this.sendDone,
      ...(this.stall ? { bodyAfter: this.stall } : {}),
    };
  }
}

export function reply(): ReplyBuilder {
  return new ReplyBuilder();
}

/**
 * A recorded stream sent verbatim: each payload becomes one `data: <payload>` event
 * (include "[DONE]" yourself). Reads test/fixtures/llm/*.jsonl lines, for provider quirks.
 */
export function replay(payloads: (string | object)[]): StreamReply {
  const steps: Step[] = payloads.map((p) => ({ kind: "raw", data: typeof p === "string" ? p : JSON.stringify(p) }));
  return { kind: "stream", steps, finishReason: null, reasoningField: "reasoning_content", reset: false, done: false, rawOnly: true };
}

/** replay() of test/fixtures/llm/<name>.jsonl (one data payload per line). */
export function replayFixture(name: string): StreamReply {
  const file = new URL(`../fixtures/llm/${name}.jsonl`, import.meta.url);
  return replay(readFileSync(file, "utf8").split("\n").filter((line) => line.trim() !== ""));
}

/** An HTTP error answer. retryAfter becomes the Retry-After header. */
export function httpError(
  status: number,
  options: { retryAfter?: string; body?: unknown; headers?: Record<string, string>; message?: string } = {},
): ErrorReply {
  const headers: Record<string, string> = { ...options.headers };
  if (options.retryAfter !== undefined) headers["retry-after"] = options.retryAfter;
  const body = options.body ?? {
    error: { message: options.message ?? `fake error ${status}`, type: errorType(status), code: status },
  };
  return { kind: "http-error", status, headers, body };
}

/** Accept the request and never answer (until close()). */
export function hang(): HangReply {
  return { kind: "hang" };
}

function errorType(status: number): string {
  if (status === 429) return "rate_limit_error";
  if (status === 401 || status === 403) return "authentication_error";
  if (status === 404) return "not_found_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

export type Responder = (request: FakeRequest) => FakeReply | Promise<FakeReply>;

export interface FakeLlmOptions {
  /**
   * Answer HTTP 400 `context_length_exceeded` (OpenAI's body) to any chat request whose prompt
   * is over this many tokens, without consuming a queued reply. Prompt size = promptTokensOf().
   */
  contextLimit?: number;
  /**
   * Simulate a provider prompt cache: usage reports the prompt's prefix shared with the
   * previous chat request (serialized messages, chars / 4) as `cached_tokens`, unless the
   * reply's own usage sets cached_tokens.
   */
  promptCache?: boolean;
  /**
   * Answer HTTP 400 (without consuming a queued reply) to any chat request with an assistant
   * tool call whose `function.arguments` is not the JSON text of an object, as providers that
   * turn arguments into an input object do (Anthropic models behind OpenRouter, Bedrock).
   */
  strictToolArguments?: boolean;
  /** Keep each request's body text as FakeRequest.rawBody (off by default: benches measure memory with the fake in process). */
  keepRawBodies?: boolean;
}

/** The fake's prompt size of a request body: JSON of the messages, 4 chars per token, at least 1. */
export function promptTokensOf(body: any): number {
  return Math.max(1, Math.ceil(JSON.stringify(body?.messages ?? []).length / 4));
}

/** The first assistant tool call of a request body whose arguments are not a JSON object's text, as "messages[i].tool_calls[j]: why". */
export function invalidToolArguments(body: any): string | null {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  for (const [i, message] of messages.entries()) {
    if (message?.role !== "assistant" || !Array.isArray(message.tool_calls)) continue;
    for (const [j, call] of message.tool_calls.entries()) {
      const args = call?.function?.arguments;
      let parsed: unknown;
      try {
        parsed = typeof args === "string" ? JSON.parse(args) : undefined;
      } catch {
        return `messages[${i}].tool_calls[${j}].function.arguments is not valid JSON: ${JSON.stringify(String(args).slice(0, 80))}`;
      }
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
        return `messages[${i}].tool_calls[${j}].function.arguments is not a JSON object: ${JSON.stringify(String(args).slice(0, 80))}`;
      }
    }
  }
  return null;
}

/** OpenAI's answer to a prompt over the window (the phrasing vLLM and OpenRouter copy). */
export function contextLengthExceeded(limit: number, prompt: number): ErrorReply {
  return httpError(400, {
    body: {
      error: {
        message: `This model's maximum context length is ${limit} tokens. However, your messages resulted in ${prompt} tokens. Please reduce the length of the messages.`,
        type: "invalid_request_error",
        param: "messages",
        code: "context_length_exceeded",
      },
    },
  });
}

export interface FakeLlm {
  /** "http://127.0.0.1:PORT/v1" */
  readonly baseUrl: string;
  readonly port: number;
  /** Every request received, in arrival order. */
  readonly requests: FakeRequest[];
  /** Chat-completion requests only. */
  readonly completionRequests: FakeRequest[];
  enqueue(...replies: FakeReply[]): void;
  /** Used when the queue is empty. */
  respond(responder: Responder | null): void;
  /** Resolves once `n` chat-completion requests have arrived. */
  waitForRequests(n: number): Promise<FakeRequest[]>;
  /** Replies still queued. */
  pending(): number;
  /** Change (or lift, with null) the context limit of FakeLlmOptions. */
  setContextLimit(tokens: number | null): void;
  /** Chat requests answered with context_length_exceeded, in arrival order. */
  readonly overflowed: FakeRequest[];
  /** Chat requests refused by strictToolArguments, in arrival order. */
  readonly refusedToolArguments: FakeRequest[];
  close(): Promise<void>;
}

export async function startFakeLlm(options: FakeLlmOptions = {}): Promise<FakeLlm> {
  let contextLimit = options.contextLimit ?? null;
  let previousPrompt = "";
  const overflowed: FakeRequest[] = [];
  const refusedToolArguments: FakeRequest[] = [];
  const queue: FakeReply[] = [];
  const requests: FakeRequest[] = [];
  const completionRequests: FakeRequest[] = [];
  const waiters: { n: number; resolve: (r: FakeRequest[]) => void }[] = [];
  const sockets = new Set<Socket>();
  let responder: Responder | null = null;
  let closed = false;
  let counter = 0;

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `fake-llm crashed: ${String(error)}`, type: "server_error" } }));
      } else res.destroy();
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    let body: any;
    try {
      body = raw.length > 0 ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined;
    }
    const path = (req.url ?? "/").split("?")[0]!;
    const record: FakeRequest = { body, headers: req.headers, path, method: req.method ?? "GET", time: Date.now(), ...(options.keepRawBodies ? { rawBody: raw } : {}) };
    requests.push(record);

    if (req.method === "GET" && path.endsWith("/models")) {
      return sendJson(res, 200, { object: "list", data: [] });
    }
    if (req.method !== "POST" || !path.endsWith("/chat/completions")) {
      return sendJson(res, 404, { error: { message: `fake-llm: no route ${req.method} ${path}`, type: "not_found_error" } });
    }
    completionRequests.push(record);
    for (const waiter of [...waiters]) {
      if (completionRequests.length >= waiter.n) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(completionRequests.slice(0, waiter.n));
      }
    }
    if (body === undefined) {
      return sendJson(res, 400, { error: { message: "fake-llm: request body is not JSON", type: "invalid_request_error" } });
    }

    const invalidArguments = options.strictToolArguments ? invalidToolArguments(body) : null;
    if (invalidArguments) {
      refusedToolArguments.push(record);
      return sendJson(res, 400, { error: { message: `fake-llm (strict): ${invalidArguments}`, type: "invalid_request_error", param: "messages" } });
    }
    const promptTokens = promptTokensOf(body);
    if (contextLimit !== null && promptTokens > contextLimit) {
      overflowed.push(record);
      const answer = contextLengthExceeded(contextLimit, promptTokens);
      return sendJson(res, answer.status, answer.body);
    }
    const serialized = JSON.stringify(body.messages ?? []);
    const cachedTokens = options.promptCache ? Math.floor(sharedPrefix(serialized, previousPrompt) / 4) : 0;
    previousPrompt = serialized;

    const next = queue.shift() ?? (responder ? await responder(record) : undefined);
    if (!next) {
      return sendJson(res, 500, {
        error: { message: "fake-llm has no scripted reply for this request (queue empty, no responder)", type: "server_error" },
      });
    }
    const id = `chatcmpl-fake-${++counter}`;
    const model = typeof body.model === "string" ? body.model : "fake-model";
    switch (next.kind) {
      case "hang":
        return; // the socket stays open until the client gives up or close() runs
      case "http-error":
        return sendJson(res, next.status, next.body, next.headers);
      case "stream":
        if (body.stream === true) return streamReply(res, next, id, model, body, cachedTokens);
        return jsonReply(res, next, id, model, body, cachedTokens);
    }
  }

  async function streamReply(res: ServerResponse, r: StreamReply, id: string, model: string, body: any, cachedTokens: number): Promise<void> {
    const created = Math.floor(Date.now() / 1000);
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.flushHeaders();
    if (r.bodyAfter) await r.bodyAfter.catch(() => undefined);
    const chunk = (delta: object, finishReason: string | null = null) =>
      send(res, { id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finishReason }] });

    if (!r.rawOnly) chunk({ role: "assistant", content: "" });
    let toolIndex = 0;
    for (const step of r.steps) {
      if (res.destroyed) return;
      switch (step.kind) {
        case "text":
          chunk({ content: step.text });
          break;
        case "thinking":
          chunk({ [r.reasoningField]: step.text });
          break;
        case "raw":
          res.write(`data: ${step.data}\n\n`);
          break;
        case "wait":
          await step.promise.catch(() => undefined);
          break;
        case "tool": {
          const index = toolIndex++;
          chunk({ tool_calls: [{ index, id: step.id, type: "function", function: { name: step.name, arguments: "" } }] });
          for (const fragment of splitInto(step.args, step.fragments)) {
            chunk({ tool_calls: [{ index, function: { arguments: fragment } }] });
          }
          break;
        }
      }
    }
    if (r.reset) {
      // Let the partial output reach the client, then cut the connection.
      await new Promise<void>((resolve) => res.write("", () => resolve()));
      res.socket?.destroy();
      return;
    }
    if (r.rawOnly) {
      res.end();
      return;
    }
    chunk({}, r.finishReason);
    send(res, { id, object: "chat.completion.chunk", created, model, choices: [], usage: wireUsage(r, body, cachedTokens) });
    if (r.done) res.write("data: [DONE]\n\n");
    res.end();
  }

  async function jsonReply(res: ServerResponse, r: StreamReply, id: string, model: string, body: any, cachedTokens: number): Promise<void> {
    if (r.rawOnly) {
      // A plain (stream: false) request answered with the scripted raw lines as its body: a garbled JSON answer.
      const text = r.steps.flatMap((step) => (step.kind === "raw" ? [step.data] : [])).join("\n");
      res.writeHead(200, { "content-type": "application/json" });
      res.end(text);
      return;
    }
    let content = "";
    let thinking = "";
    const toolCalls: object[] = [];
    for (const step of r.steps) {
      if (step.kind === "text") content += step.text;
      else if (step.kind === "thinking") thinking += step.text;
      else if (step.kind === "wait") await step.promise.catch(() => undefined);
      else if (step.kind === "tool") toolCalls.push({ id: step.id, type: "function", function: { name: step.name, arguments: step.args } });
    }
    if (r.reset) {
      res.socket?.destroy();
      return;
    }
    const message: Record<string, unknown> = { role: "assistant", content: content.length > 0 ? content : null };
    if (thinking) message[r.reasoningField] = thinking;
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    sendJson(res, 200, {
      id,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message, finish_reason: r.finishReason }],
      usage: wireUsage(r, body, cachedTokens),
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    completionRequests,
    enqueue(...replies) {
      queue.push(...replies);
    },
    respond(fn) {
      responder = fn;
    },
    waitForRequests(n) {
      if (completionRequests.length >= n) return Promise.resolve(completionRequests.slice(0, n));
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    pending: () => queue.length,
    setContextLimit(tokens) {
      contextLimit = tokens;
    },
    overflowed,
    refusedToolArguments,
    async close() {
      if (closed) return;
      closed = true;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function send(res: ServerResponse, payload: object): void {
  if (!res.destroyed) res.write(`data: ${JSON.stringify(payload)}\n\n`);
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** Splits `text` into `n` non-empty pieces (fewer when the text is short). */
function splitInto(text: string, n: number): string[] {
  if (text.length === 0) return [];
  const count = Math.max(1, Math.min(n, text.length));
  const size = Math.ceil(text.length / count);
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

/** Length of the common prefix of two strings. */
function sharedPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

function wireUsage(r: StreamReply, body: any, cachedTokens = 0): object {
  const u = r.usage ?? {};
  const output = r.steps.reduce((n, s) => n + (s.kind === "text" || s.kind === "thinking" ? s.text.length : s.kind === "tool" ? s.args.length : 0), 0);
  const prompt = u.prompt_tokens ?? promptTokensOf(body);
  const completion = u.completion_tokens ?? Math.max(1, Math.ceil(output / 4));
  const usage: Record<string, unknown> = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: u.total_tokens ?? prompt + completion,
    prompt_tokens_details: { cached_tokens: u.cached_tokens ?? Math.min(cachedTokens, prompt), ...(u.cache_write_tokens !== undefined ? { cache_write_tokens: u.cache_write_tokens } : {}) },
  };
  if (u.reasoning_tokens !== undefined) usage.completion_tokens_details = { reasoning_tokens: u.reasoning_tokens };
  return usage;
}

/** Settings whose only provider, "fake", is this fake LLM (OpenAI wire, key "k"), with the given retries. */
export function fakeProviderSettings(llm: Pick<FakeLlm, "baseUrl">, retry: Settings["retry"]): Settings {
  return { ...defaultSettings(), providers: { fake: { type: "openai", baseUrl: llm.baseUrl, apiKey: "k" } }, defaultProvider: "fake", retry };
}

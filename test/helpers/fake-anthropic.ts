/**
 * A fake Anthropic Messages API: a real HTTP server on 127.0.0.1 (port 0) that answers
 * `POST /v1/messages` with scripted replies, streamed as SSE exactly the way Anthropic
 * streams them (`event: message_start` … `content_block_start/delta/stop` … `message_delta`
 * with the stop reason and output usage … `message_stop`). It drives the real `claude`
 * binary of the Claude Agent SDK (`ANTHROPIC_BASE_URL=<baseUrl>`).
 *
 * ```ts
 * const api = await startFakeAnthropic();
 * api.enqueue(message().thinking("hmm").tool("mcp__veil__bash", { command: "ls" }).stop());
 * api.enqueue(message().text("done").usage({ cache_read_input_tokens: 900 }).stop());
 * api.enqueue(apiError(529));
 * ...
 * await api.close();
 * ```
 *
 * What the binary sends besides: `HEAD /api/hello` at start (a connectivity probe, answered
 * 200) and, depending on the build, `POST /v1/messages/count_tokens` (answered with an
 * estimate). Deliberately independent of src/ (it must not share bugs with the code it tests).
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

export interface AnthropicRequest {
  /** Parsed JSON body (undefined when the body was not JSON). */
  body: any;
  headers: IncomingHttpHeaders;
  path: string;
  method: string;
  time: number;
}

type Block =
  | { kind: "text"; text: string; pieces: number }
  | { kind: "thinking"; text: string; signature: string; pieces: number }
  | { kind: "tool"; id: string; name: string; json: string; fragments: number }
  | { kind: "wait"; promise: Promise<unknown> };

export interface MessageReply {
  kind: "message";
  blocks: Block[];
  /** null when the reply ends with reset(). */
  stopReason: string | null;
  usage: AnthropicUsage;
  reset: boolean;
}

export interface ApiErrorReply {
  kind: "api-error";
  status: number;
  type: string;
  message: string;
  headers: Record<string, string>;
}

export interface HangReply {
  kind: "hang";
}

export type AnthropicReply = MessageReply | ApiErrorReply | HangReply;

let toolIds = 0;

/** Fluent builder of one streamed assistant message. */
export class MessageBuilder {
  private readonly blocks: Block[] = [];
  private usageValue: AnthropicUsage = {};
  private stopOverride?: string;

  /** A text block, streamed in `pieces` text_delta events (default 2). */
  text(text: string, pieces = 2): this {
    this.blocks.push({ kind: "text", text, pieces });
    return this;
  }

  /** A thinking block: thinking_delta events, then one signature_delta. */
  thinking(text: string, options: { signature?: string; pieces?: number } = {}): this {
    this.blocks.push({ kind: "thinking", text, signature: options.signature ?? "sig-fake", pieces: options.pieces ?? 2 });
    return this;
  }

  /** A tool_use block; its input JSON is split across `fragments` input_json_delta events (default 3). */
  tool(name: string, input: unknown, options: { id?: string; fragments?: number } = {}): this {
    this.blocks.push({ kind: "tool", id: options.id ?? `toolu_fake_${++toolIds}`, name, json: JSON.stringify(input), fragments: options.fragments ?? 3 });
    return this;
  }

  /** Pause the stream here (before the next block) until the promise settles. */
  waitFor(promise: Promise<unknown>): this {
    this.blocks.push({ kind: "wait", promise });
    return this;
  }

  usage(usage: AnthropicUsage): this {
    this.usageValue = { ...this.usageValue, ...usage };
    return this;
  }

  /** Finish normally; the stop reason defaults to tool_use when there are tool blocks, else end_turn. */
  stop(reason?: string): MessageReply {
    const hasTools = this.blocks.some((b) => b.kind === "tool");
    return { kind: "message", blocks: [...this.blocks], stopReason: reason ?? this.stopOverride ?? (hasTools ? "tool_use" : "end_turn"), usage: this.usageValue, reset: false };
  }

  /** Cut the connection after the blocks so far (no message_delta, no message_stop). */
  reset(): MessageReply {
    return { kind: "message", blocks: [...this.blocks], stopReason: null, usage: this.usageValue, reset: true };
  }
}

export function message(): MessageBuilder {
  return new MessageBuilder();
}

/** An Anthropic error answer: `{ type: "error", error: { type, message } }`. */
export function apiError(status: number, options: { type?: string; message?: string; headers?: Record<string, string> } = {}): ApiErrorReply {
  return { kind: "api-error", status, type: options.type ?? errorType(status), message: options.message ?? `fake error ${status}`, headers: options.headers ?? {} };
}

/** Accept the request and never answer (until close()). */
export function hang(): HangReply {
  return { kind: "hang" };
}

function errorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit_error";
  if (status === 529) return "overloaded_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

export type AnthropicResponder = (request: AnthropicRequest) => AnthropicReply | Promise<AnthropicReply>;

export interface FakeAnthropic {
  /** "http://127.0.0.1:PORT" (what ANTHROPIC_BASE_URL takes; no /v1). */
  readonly baseUrl: string;
  readonly port: number;
  /** Every request received, in arrival order. */
  readonly requests: AnthropicRequest[];
  /** `POST /v1/messages` requests only. */
  readonly messageRequests: AnthropicRequest[];
  enqueue(...replies: AnthropicReply[]): void;
  /** Used when the queue is empty. */
  respond(responder: AnthropicResponder | null): void;
  /** Resolves once `n` message requests have arrived. */
  waitForRequests(n: number): Promise<AnthropicRequest[]>;
  pending(): number;
  close(): Promise<void>;
}

export async function startFakeAnthropic(): Promise<FakeAnthropic> {
  const queue: AnthropicReply[] = [];
  const requests: AnthropicRequest[] = [];
  const messageRequests: AnthropicRequest[] = [];
  const waiters: { n: number; resolve: (r: AnthropicRequest[]) => void }[] = [];
  const sockets = new Set<Socket>();
  let responder: AnthropicResponder | null = null;
  let closed = false;
  let counter = 0;

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, "api_error", `fake-anthropic crashed: ${String(error)}`);
      else res.destroy();
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
    const record: AnthropicRequest = { body, headers: req.headers, path, method: req.method ?? "GET", time: Date.now() };
    requests.push(record);

    if (path === "/api/hello") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(req.method === "HEAD" ? undefined : JSON.stringify({ message: "hello" }));
      return;
    }
    if (req.method === "GET" && path === "/v1/models") {
      return sendJson(res, 200, { data: [], has_more: false, first_id: null, last_id: null });
    }
    if (req.method === "POST" && path === "/v1/messages/count_tokens") {
      return sendJson(res, 200, { input_tokens: estimateInput(body) });
    }
    if (req.method !== "POST" || path !== "/v1/messages") {
      return sendError(res, 404, "not_found_error", `fake-anthropic: no route ${req.method} ${path}`);
    }
    messageRequests.push(record);
    for (const waiter of [...waiters]) {
      if (messageRequests.length >= waiter.n) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(messageRequests.slice(0, waiter.n));
      }
    }
    if (body === undefined) return sendError(res, 400, "invalid_request_error", "fake-anthropic: request body is not JSON");
    if (req.headers["x-api-key"] === undefined && req.headers.authorization === undefined) {
      return sendError(res, 401, "authentication_error", "fake-anthropic: no x-api-key header");
    }

    const next = queue.shift() ?? (responder ? await responder(record) : undefined);
    if (!next) return sendError(res, 500, "api_error", "fake-anthropic has no scripted reply for this request (queue empty, no responder)");
    switch (next.kind) {
      case "hang":
        return;
      case "api-error":
        return sendError(res, next.status, next.type, next.message, next.headers);
      case "message":
        if (body.stream === true) return streamMessage(res, next, `msg_fake_${++counter}`, String(body.model ?? "claude-fake"), body);
        return jsonMessage(res, next, `msg_fake_${++counter}`, String(body.model ?? "claude-fake"), body);
    }
  }

  async function streamMessage(res: ServerResponse, r: MessageReply, id: string, model: string, body: any): Promise<void> {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive", "request-id": `req_${id}` });
    res.flushHeaders();
    const usage = wireUsage(r, body);
    event(res, "message_start", {
      message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
    });
    event(res, "ping", {});
    let index = 0;
    for (const block of r.blocks) {
      if (res.destroyed) return;
      if (block.kind === "wait") {
        await block.promise.catch(() => undefined);
        continue;
      }
      const i = index++;
      switch (block.kind) {
        case "text":
          event(res, "content_block_start", { index: i, content_block: { type: "text", text: "" } });
          for (const piece of splitInto(block.text, block.pieces)) event(res, "content_block_delta", { index: i, delta: { type: "text_delta", text: piece } });
          break;
        case "thinking":
          event(res, "content_block_start", { index: i, content_block: { type: "thinking", thinking: "", signature: "" } });
          for (const piece of splitInto(block.text, block.pieces)) event(res, "content_block_delta", { index: i, delta: { type: "thinking_delta", thinking: piece } });
          event(res, "content_block_delta", { index: i, delta: { type: "signature_delta", signature: block.signature } });
          break;
        case "tool":
          event(res, "content_block_start", { index: i, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } });
          event(res, "content_block_delta", { index: i, delta: { type: "input_json_delta", partial_json: "" } });
          for (const fragment of splitInto(block.json, block.fragments)) {
            event(res, "content_block_delta", { index: i, delta: { type: "input_json_delta", partial_json: fragment } });
          }
          break;
      }
      event(res, "content_block_stop", { index: i });
    }
    if (r.reset) {
      await new Promise<void>((resolve) => res.write("", () => resolve()));
      res.socket?.destroy();
      return;
    }
    event(res, "message_delta", { delta: { stop_reason: r.stopReason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
    event(res, "message_stop", {});
    res.end();
  }

  async function jsonMessage(res: ServerResponse, r: MessageReply, id: string, model: string, body: any): Promise<void> {
    const content: object[] = [];
    for (const block of r.blocks) {
      if (block.kind === "wait") await block.promise.catch(() => undefined);
      else if (block.kind === "text") content.push({ type: "text", text: block.text });
      else if (block.kind === "thinking") content.push({ type: "thinking", thinking: block.text, signature: block.signature });
      else content.push({ type: "tool_use", id: block.id, name: block.name, input: JSON.parse(block.json) });
    }
    if (r.reset) {
      res.socket?.destroy();
      return;
    }
    sendJson(res, 200, { id, type: "message", role: "assistant", model, content, stop_reason: r.stopReason, stop_sequence: null, usage: wireUsage(r, body) });
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    requests,
    messageRequests,
    enqueue(...replies) {
      queue.push(...replies);
    },
    respond(fn) {
      responder = fn;
    },
    waitForRequests(n) {
      if (messageRequests.length >= n) return Promise.resolve(messageRequests.slice(0, n));
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    pending: () => queue.length,
    async close() {
      if (closed) return;
      closed = true;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function event(res: ServerResponse, type: string, payload: object): void {
  if (!res.destroyed) res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`);
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

function sendError(res: ServerResponse, status: number, type: string, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { type: "error", error: { type, message } }, headers);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function splitInto(text: string, n: number): string[] {
  if (text.length === 0) return [];
  const count = Math.max(1, Math.min(n, text.length));
  const size = Math.ceil(text.length / count);
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

function estimateInput(body: any): number {
  return Math.max(1, Math.ceil(JSON.stringify(body?.messages ?? []).length / 4));
}

/** Scripted usage, else estimates: input from the request size, output from the blocks' size. */
function wireUsage(r: MessageReply, body: any): Required<AnthropicUsage> {
  const output = r.blocks.reduce((n, b) => n + (b.kind === "text" || b.kind === "thinking" ? b.text.length : b.kind === "tool" ? b.json.length : 0), 0);
  return {
    input_tokens: r.usage.input_tokens ?? estimateInput(body),
    output_tokens: r.usage.output_tokens ?? Math.max(1, Math.ceil(output / 4)),
    cache_read_input_tokens: r.usage.cache_read_input_tokens ?? 0,
    cache_creation_input_tokens: r.usage.cache_creation_input_tokens ?? 0,
  };
}

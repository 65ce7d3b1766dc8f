import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Clock } from "../../base/clock.js";
import type { Logger } from "../../base/log.js";
import { errorMessage } from "../../errors.js";
import { nodeHttpTransport } from "../openai-compatible/http-transport.js";
import { normalized } from "./compare.js";
import { isWireLine, readRecording, recordingAppender, ReplayQueue } from "./file.js";
import type { WireExchange } from "./format.js";

/** What a turn of the claude-cli engine gets: the base URL its SDK talks to, and its end. */
export interface ProxyRoute {
  /** `http://127.0.0.1:PORT/t/<token>` (ANTHROPIC_BASE_URL takes it; the SDK adds `/v1/messages`). */
  baseUrl: string;
  release(): void;
}

export interface AnthropicRecordingProxy {
  /**
   * A route for one turn. Record mode forwards its requests to `upstream`; replay mode tells
   * `onMismatch` the REPLAY_MISMATCH message of a request the recording does not hold.
   */
  route(options: { upstream: string; onMismatch: (message: string) => void }): ProxyRoute;
  close(): Promise<void>;
}

export interface ProxyOptions {
  mode: "record" | "replay";
  file: string;
  workspace: string;
  clock: Clock;
  log?: Logger;
}

/** Requests that are model calls: recorded, and replayed strictly in order. The rest is the binary's housekeeping. */
const MODEL_CALL = /^\/v1\/messages(\/count_tokens)?$/;

/** Request headers not passed on upstream: the hop's own, and the encodings (the transport asks for none and decodes any). */
const HOP_REQUEST_HEADERS = new Set(["host", "connection", "content-length", "accept-encoding", "keep-alive", "transfer-encoding"]);
/** Response headers not passed back: the transport has already decoded and de-chunked the body. */
const HOP_RESPONSE_HEADERS = new Set(["content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"]);

/**
 * A loopback HTTP endpoint between the claude-cli engine's Agent SDK and the Anthropic API,
 * for VEIL_RECORD (forward, and append each model exchange as a `wire: "anthropic"` line) and
 * VEIL_REPLAY (answer from those lines, nothing sent anywhere). It never holds a key: what the
 * SDK sends is passed on as is in record mode, and no header is recorded.
 */
export async function startAnthropicRecordingProxy(options: ProxyOptions): Promise<AnthropicRecordingProxy> {
  const routes = new Map<string, { upstream: string; onMismatch: (message: string) => void }>();
  const append = recordingAppender(options.file, options.log);
  const replay = options.mode === "replay" ? replayQueue(options.file) : null;
  // node:http, as for the native engine's providers: fetch's own 300 s waits would cut a slow answer.
  const transport = nodeHttpTransport();
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 502, "api_error", `veil recording proxy: ${errorMessage(error)}`);
      else res.destroy();
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const match = /^\/t\/([0-9a-f-]{36})(\/[^?]*)(\?.*)?$/.exec(req.url ?? "");
    const route = match ? routes.get(match[1]!) : undefined;
    if (!match || !route) return sendError(res, 404, "not_found_error", "veil recording proxy: no such turn (it has ended)");
    const path = match[2]!;
    const raw = await readBody(req);
    const method = req.method ?? "GET";
    const modelCall = method === "POST" && MODEL_CALL.test(path);
    const body = modelCall ? recordedBody(raw) : undefined;
    if (replay) return answerFromRecording(res, { method, path, body: body ?? null }, modelCall, route.onMismatch);
    // The SDK leaving (its timeout, a cancel) ends the upstream call too.
    const left = new AbortController();
    res.once("close", () => left.abort());
    const upstream = await transport(`${route.upstream.replace(/\/+$/, "")}${path}${match[3] ?? ""}`, {
      method,
      signal: left.signal,
      headers: forwardedHeaders(req),
      body: method === "GET" || method === "HEAD" ? "" : raw,
    });
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(upstream.headers())) if (!HOP_RESPONSE_HEADERS.has(key)) headers[key] = value;
    res.writeHead(upstream.status, headers);
    const chunks: Buffer[] = [];
    for await (const chunk of upstream.body) {
      if (res.destroyed) return; // the SDK left before the end: not an exchange, nothing is recorded
      chunks.push(Buffer.from(chunk));
      res.write(chunk);
    }
    res.end();
    if (!modelCall) return;
    append({
      at: new Date(options.clock.now()).toISOString(),
      workspace: options.workspace,
      wire: "anthropic",
      request: { method, path, body: body ?? null },
      response: { status: upstream.status, contentType: upstream.header("content-type") ?? "", body: Buffer.concat(chunks).toString("utf8") },
    });
  }

  function answerFromRecording(res: ServerResponse, asked: WireExchange["request"], modelCall: boolean, onMismatch: (message: string) => void): void {
    if (!modelCall) return answerHousekeeping(res, asked);
    const taken = replay!.take(normalized(asked, options.workspace));
    if ("mismatch" in taken) {
      onMismatch(taken.mismatch);
      // A 400 is not retried: the SDK gives up on this call at once.
      return sendError(res, 400, "invalid_request_error", `REPLAY_MISMATCH: ${taken.mismatch}`);
    }
    const { status, contentType, body } = taken.value.response;
    res.writeHead(status, { "content-type": contentType || "application/json" });
    res.end(body);
  }

  return {
    route({ upstream, onMismatch }) {
      const token = randomUUID();
      routes.set(token, { upstream, onMismatch });
      return { baseUrl: `http://127.0.0.1:${port}/t/${token}`, release: () => void routes.delete(token) };
    },
    async close() {
      routes.clear();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The claude-cli engine's lines of a recording, each normalized by the workspace it was recorded in. */
function replayQueue(file: string): ReplayQueue<WireExchange> {
  const lines = readRecording(file).flatMap(({ line, exchange }) => (isWireLine(exchange) ? [{ line, request: normalized(exchange.request, exchange.workspace), value: exchange }] : []));
  return new ReplayQueue(file, lines);
}

/** A model call's body as recorded: `metadata` names the machine and the SDK's session, not what is asked. */
function recordedBody(raw: string): unknown {
  try {
    const body = JSON.parse(raw) as unknown;
    if (body && typeof body === "object" && !Array.isArray(body)) {
      const { metadata: _metadata, ...rest } = body as Record<string, unknown>;
      return rest;
    }
    return body;
  } catch {
    return raw;
  }
}

/** Replay answers what the binary asks besides model calls (its connectivity probe, the model list) without a recording. */
function answerHousekeeping(res: ServerResponse, asked: WireExchange["request"]): void {
  if (asked.path === "/api/hello") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(asked.method === "HEAD" ? undefined : JSON.stringify({ message: "hello" }));
    return;
  }
  if (asked.method === "GET" && asked.path === "/v1/models") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ data: [], has_more: false, first_id: null, last_id: null }));
    return;
  }
  sendError(res, 404, "not_found_error", `VEIL_REPLAY: ${asked.method} ${asked.path} is not a model call and is not replayed`);
}

function forwardedHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP_REQUEST_HEADERS.has(key)) continue;
    headers[key] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}

function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ type: "error", error: { type, message } }));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/**
 * How a provider's requests go out: node:http (node:https for https URLs) with keep-alive
 * agents, one pair per provider.
 *
 * Why not fetch: Node's fetch is undici, whose waits (300 s to the response headers, 300 s
 * between body chunks) would end a slow local model's prefill before firstByteTimeoutMs, and
 * turning them off takes an undici Agent from the npm package, which adds its own copy of
 * undici to load. node:http has no waits of its own (the SilenceTimer sets them) and its
 * first request costs a fraction of fetch's (no WebAssembly HTTP parser to compile), which
 * every `veil run` pays.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import type * as Https from "node:https";
import { createRequire } from "node:module";
import { pipeline, type Readable, type Transform } from "node:stream";
import { finished } from "node:stream/promises";
import type * as Zlib from "node:zlib";

export interface HttpCall {
  method: string;
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
  /** Called once the whole request has been handed to the socket (Node's "finish"). */
  sent?: () => void;
}

export interface HttpAnswer {
  status: number;
  /** A response header (any case), or null. */
  header(name: string): string | null;
  /** Every response header, lower-case names, repeated ones joined. */
  headers(): Record<string, string>;
  /** The body, decoded from its content-encoding; reading it throws when the connection fails or the call is aborted. */
  body: AsyncIterable<Uint8Array>;
}

/** Sends one request; resolves at the response headers, rejects when no response came (refused, reset, aborted). */
export type HttpTransport = (url: string, call: HttpCall) => Promise<HttpAnswer>;

// TLS and zlib load only for a provider that needs them.
const require = createRequire(import.meta.url);

/**
 * How long a kept-alive connection may sit idle before we close it, or a second less than
 * the server's own `Keep-Alive: timeout=N` when that is shorter (node:http reads the hint
 * only with an agent timeout): a request must not go out on a connection the server is
 * closing at that moment. undici's default. On a busy connection the timeout is an event
 * nobody listens to; the SilenceTimer owns the request's waits.
 */
export const IDLE_CONNECTION_MS = 4000;

/** A kept-alive connection the server closed as the request went out. */
const RESET_CODES = new Set(["ECONNRESET", "EPIPE"]);

export function nodeHttpTransport(options: { idleConnectionMs?: number } = {}): HttpTransport {
  const timeout = options.idleConnectionMs ?? IDLE_CONNECTION_MS;
  let plain: HttpAgent | undefined;
  let secure: Https.Agent | undefined;
  return (url, call) =>
    new Promise<HttpAnswer>((resolve, reject) => {
      const target = new URL(url);
      const headers = { ...call.headers, "content-length": String(Buffer.byteLength(call.body)) };
      const send = (retried: boolean) => {
        let req;
        let responded = false;
        const respond = (res: IncomingMessage) => {
          responded = true;
          resolve(answer(res));
        };
        if (target.protocol === "https:") {
          const https = require("node:https") as typeof Https;
          req = https.request(target, { method: call.method, headers, agent: (secure ??= new https.Agent({ keepAlive: true, timeout })), signal: call.signal }, respond);
        } else {
          req = httpRequest(target, { method: call.method, headers, agent: (plain ??= new HttpAgent({ keepAlive: true, timeout })), signal: call.signal }, respond);
        }
        const sent = req;
        sent.on("error", (error: NodeJS.ErrnoException) => {
          // Once, as Node's documentation advises: the server never saw a request whose reused
          // connection it had closed. After the response, a failure reaches the body's reader.
          if (!responded && !retried && sent.reusedSocket && !call.signal.aborted && RESET_CODES.has(error.code ?? "")) send(true);
          else reject(error);
        });
        if (call.sent) sent.once("finish", call.sent);
        sent.end(call.body);
      };
      send(false);
    });
}

function answer(res: IncomingMessage): HttpAnswer {
  // The body's reader sees a failure; with no reader yet it must not be an uncaught error.
  res.on("error", () => undefined);
  const decoder = decompressor(headerValue(res.headers, "content-encoding"));
  return {
    status: res.statusCode ?? 0,
    header: (name) => headerValue(res.headers, name),
    headers: () => Object.fromEntries(Object.keys(res.headers).map((name) => [name, headerValue(res.headers, name)!])),
    body: readBody(decoder ? pipeline(res, decoder, () => undefined) : res, res),
  };
}

/**
 * The body's chunks. A reader that stops before the end (at a stream's `[DONE]`, the last
 * bytes still in the buffer) leaves a body that has fully arrived to drain, so its
 * keep-alive connection serves the next request; one still arriving is cut.
 */
async function* readBody(body: Readable, res: IncomingMessage): AsyncGenerator<Uint8Array> {
  let ended = false;
  try {
    for await (const chunk of body.iterator({ destroyOnReturn: false })) yield chunk as Uint8Array;
    ended = true;
  } finally {
    if (!ended && res.complete && !body.destroyed) {
      body.resume();
      await finished(body).catch(() => undefined);
    } else if (!ended) body.destroy();
  }
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | null {
  const value = headers[name.toLowerCase()];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(", ") : value;
}

/** We ask for no encoding, but a server or proxy may compress anyway. */
function decompressor(encoding: string | null): Transform | null {
  switch (encoding?.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return (require("node:zlib") as typeof Zlib).createGunzip();
    case "deflate":
      return (require("node:zlib") as typeof Zlib).createInflate();
    case "br":
      return (require("node:zlib") as typeof Zlib).createBrotliDecompress();
    default:
      return null;
  }
}

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
}

export interface HttpAnswer {
  status: number;
  /** A response header (any case), or null. */
  header(name: string): string | null;
  /** The body, decoded from its content-encoding; reading it throws when the connection fails or the call is aborted. */
  body: AsyncIterable<Uint8Array>;
}

/** Sends one request; resolves at the response headers, rejects when no response came (refused, reset, aborted). */
export type HttpTransport = (url: string, call: HttpCall) => Promise<HttpAnswer>;

// TLS and zlib load only for a provider that needs them.
const require = createRequire(import.meta.url);

export function nodeHttpTransport(): HttpTransport {
  let plain: HttpAgent | undefined;
  let secure: Https.Agent | undefined;
  return (url, call) =>
    new Promise<HttpAnswer>((resolve, reject) => {
      const target = new URL(url);
      const headers = { ...call.headers, "content-length": String(Buffer.byteLength(call.body)) };
      const respond = (res: IncomingMessage) => resolve(answer(res));
      let req;
      if (target.protocol === "https:") {
        const https = require("node:https") as typeof Https;
        req = https.request(target, { method: call.method, headers, agent: (secure ??= new https.Agent({ keepAlive: true })), signal: call.signal }, respond);
      } else {
        req = httpRequest(target, { method: call.method, headers, agent: (plain ??= new HttpAgent({ keepAlive: true })), signal: call.signal }, respond);
      }
      // After the response, a failure reaches whoever reads the body.
      req.on("error", reject);
      req.end(call.body);
    });
}

function answer(res: IncomingMessage): HttpAnswer {
  // The body's reader sees a failure; with no reader yet it must not be an uncaught error.
  res.on("error", () => undefined);
  const decoder = decompressor(headerValue(res.headers, "content-encoding"));
  return {
    status: res.statusCode ?? 0,
    header: (name) => headerValue(res.headers, name),
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

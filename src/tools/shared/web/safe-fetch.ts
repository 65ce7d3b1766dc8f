import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { promisify } from "node:util";
import { brotliDecompress, gunzip, inflate, inflateRaw, type ZlibOptions } from "node:zlib";
import { Agent, buildConnector, request } from "undici";
import { ToolError, VeilError } from "../../../errors.js";
import type { Clock } from "../../../base/clock.js";
import type { Settings } from "../../../config/types.js";
import type { ToolContext } from "../../types.js";
import { blockedAddressReason, canonicalHost, isLocalhostName, isLoopbackAddress } from "./address-policy.js";

/**
 * HTTP(S) GET/POST that cannot be pointed at this machine or its networks.
 *
 * Every connection is checked when it is made: literal IP hosts before connecting,
 * names inside the socket's DNS lookup (all answers must be public), so a DNS answer
 * that changes between a check and the connect (rebinding) cannot get through.
 * Redirects are followed by hand, each hop checked again. Limits: bytes (raw and after
 * decompression), redirect hops, and total wall time; each gives a FETCH_ERROR.
 */

export const DEFAULT_MAX_BYTES = 10 * 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_REDIRECTS = 5;
const USER_AGENT = "Mozilla/5.0 (compatible; Veil/0.1; +https://www.npmjs.com/package/veilcli)";

export interface FetchLimits {
  maxBytes: number;
  timeoutMs: number;
  maxRedirects: number;
}

export function fetchLimits(settings: Settings): FetchLimits {
  const web = settings.webFetch ?? { allowHosts: [] };
  return {
    maxBytes: positive(web.maxBytes) ?? DEFAULT_MAX_BYTES,
    timeoutMs: positive(web.timeoutMs) ?? DEFAULT_TIMEOUT_MS,
    maxRedirects: typeof web.maxRedirects === "number" && web.maxRedirects >= 0 ? Math.floor(web.maxRedirects) : DEFAULT_MAX_REDIRECTS,
  };
}

/** Fetch options from a tool context: allowHosts, limits, self port, signal, clock. */
export function fetchOptionsFromContext(ctx: ToolContext, extraAllowHosts: readonly string[] = []): SafeFetchOptions {
  const self = ctx.services.selfAddress?.get();
  return {
    ...fetchLimits(ctx.settings),
    allowHosts: [...(ctx.settings.webFetch?.allowHosts ?? []), ...extraAllowHosts],
    selfPort: self?.port,
    signal: ctx.signal,
    clock: ctx.clock,
  };
}

function positive(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : undefined;
}

export interface SafeFetchOptions extends FetchLimits {
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  /** Hosts exempt from the private-address refusal (settings.webFetch.allowHosts). */
  allowHosts: readonly string[];
  /** The Veil server's own port: refused on loopback even for allowed hosts. */
  selfPort?: number;
  signal?: AbortSignal;
  clock: Clock;
}

export interface FetchedResponse {
  requestedUrl: string;
  finalUrl: string;
  status: number;
  headers: Record<string, string>;
  contentType: string;
  /** Decoded (decompressed) body. */
  body: Buffer;
  redirects: number;
}

/** A refused fetch: FETCH_BLOCKED with the reason, for the model to read. */
function blocked(reason: string): ToolError {
  return new ToolError("FETCH_BLOCKED", reason, { details: { reason } });
}

function fetchError(reason: string, cause?: unknown): ToolError {
  return new ToolError("FETCH_ERROR", reason, { details: { reason }, cause });
}

/** Parses and checks a URL's scheme; throws VALIDATION_ERROR / FETCH_BLOCKED. */
export function parseFetchUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ToolError("VALIDATION_ERROR", `not a valid URL: ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw blocked(`only http and https URLs may be fetched (got ${url.protocol.replace(/:$/, "")})`);
  }
  return url;
}

class AddressPolicy {
  private readonly allowed: Set<string>;

  constructor(allowHosts: readonly string[], private readonly selfPort: number | undefined) {
    this.allowed = new Set(allowHosts.map(normaliseAllowEntry));
  }

  isAllowed(host: string): boolean {
    return this.allowed.has(canonicalHost(host));
  }

  /** Why connecting `host` (resolved to `address`) on `port` is refused, or null. */
  check(host: string, address: string, port: number): string | null {
    if (this.isAllowed(host)) {
      if (this.selfPort !== undefined && port === this.selfPort && isLoopbackAddress(address)) {
        return `${host}:${port} is the Veil server itself`;
      }
      return null;
    }
    const reason = blockedAddressReason(address);
    if (!reason) return null;
    return canonicalHost(host) === canonicalHost(address)
      ? `${address} is a ${reason} address`
      : `${canonicalHost(host)} resolves to ${address}, a ${reason} address`;
  }

  /** Checks that need no network: literal IPs and localhost names. */
  precheck(url: URL): void {
    const host = canonicalHost(url.hostname);
    if (host.length === 0) throw new ToolError("VALIDATION_ERROR", `URL has no host: ${url.href}`);
    const port = portOf(url);
    if (isIP(host)) {
      const reason = this.check(host, host, port);
      if (reason) throw blocked(reason);
    } else if (!this.isAllowed(host) && isLocalhostName(host)) {
      throw blocked(`${host} is this machine (loopback)`);
    }
  }
}

function normaliseAllowEntry(entry: string): string {
  try {
    return canonicalHost(new URL(`http://${entry.trim()}/`).hostname);
  } catch {
    return canonicalHost(entry);
  }
}

function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
}

interface Guard {
  reason: string | null;
}

/** A socket connector that refuses disallowed addresses at connect time. */
function guardedConnector(policy: AddressPolicy, guard: Guard, timeoutMs: number): buildConnector.connector {
  return (options, callback) => {
    const host = canonicalHost(options.hostname);
    const port = Number(options.port) || (options.protocol === "https:" ? 443 : 80);
    if (isIP(host)) {
      const reason = policy.check(host, host, port);
      if (reason) {
        guard.reason = reason;
        callback(new Error(reason), null);
        return;
      }
    }
    const lookup: LookupFunction = (hostname, lookupOptions, done) => {
      dnsLookup(hostname, { ...lookupOptions, all: true }, (error, addresses: LookupAddress[]) => {
        if (error) return done(error, "", 0);
        for (const answer of addresses) {
          const reason = policy.check(hostname, answer.address, port);
          if (reason) {
            guard.reason = reason;
            return done(Object.assign(new Error(reason), { code: "EVEILBLOCKED" }), "", 0);
          }
        }
        if (addresses.length === 0) return done(Object.assign(new Error(`no address for ${hostname}`), { code: "ENOTFOUND" }), "", 0);
        if (lookupOptions.all) return (done as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
        return done(null, addresses[0]!.address, addresses[0]!.family);
      });
    };
    buildConnector({ timeout: timeoutMs, lookup })(options, callback);
  };
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Fetches `rawUrl` under the address policy and limits. */
export async function safeFetch(rawUrl: string, options: SafeFetchOptions): Promise<FetchedResponse> {
  let url = parseFetchUrl(rawUrl);
  const policy = new AddressPolicy(options.allowHosts, options.selfPort);
  const guard: Guard = { reason: null };
  const deadline = new AbortController();
  const cancelTimer = options.clock.setTimer(options.timeoutMs, () => deadline.abort(new Error("deadline")));
  const signal = options.signal ? AbortSignal.any([options.signal, deadline.signal]) : deadline.signal;
  const agent = new Agent({
    connect: guardedConnector(policy, guard, options.timeoutMs),
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
  });
  let method = options.method ?? "GET";
  let body = options.body;
  let headers: Record<string, string> = {
    "user-agent": USER_AGENT,
    accept: "text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.8,*/*;q=0.5",
    "accept-encoding": "gzip, deflate, br",
    ...options.headers,
  };
  try {
    for (let hop = 0; ; hop++) {
      policy.precheck(url);
      if (signal.aborted) break;
      const response = await request(url, { dispatcher: agent, method, headers, body, signal });
      const location = response.headers.location;
      if (REDIRECTS.has(response.statusCode) && typeof location === "string" && location.length > 0) {
        discard(response.body);
        if (hop >= options.maxRedirects) {
          throw fetchError(`too many redirects: more than ${options.maxRedirects} hops (last at ${url.href})`);
        }
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw fetchError(`redirect to an invalid URL: ${JSON.stringify(location)}`);
        }
        if (next.protocol !== "http:" && next.protocol !== "https:") {
          throw blocked(`redirect to a ${next.protocol.replace(/:$/, "")} URL refused; only http and https may be fetched`);
        }
        if (response.statusCode === 303 || ((response.statusCode === 301 || response.statusCode === 302) && method === "POST")) {
          method = "GET";
          body = undefined;
          headers = Object.fromEntries(Object.entries(headers).filter(([k]) => k.toLowerCase() !== "content-type"));
        }
        url = next;
        continue;
      }
      const raw = await readCapped(response.body, response.headers["content-length"], options.maxBytes);
      const decoded = await decodeBody(raw, header(response.headers["content-encoding"]), options.maxBytes);
      const flat: Record<string, string> = {};
      for (const [key, value] of Object.entries(response.headers)) {
        if (value !== undefined) flat[key] = Array.isArray(value) ? value.join(", ") : value;
      }
      return {
        requestedUrl: rawUrl,
        finalUrl: url.href,
        status: response.statusCode,
        headers: flat,
        contentType: flat["content-type"] ?? "",
        body: decoded,
        redirects: hop,
      };
    }
    throw new Error("aborted");
  } catch (error) {
    if (guard.reason) throw blocked(guard.reason);
    if (error instanceof VeilError) throw error;
    if (deadline.signal.aborted) throw fetchError(`timed out after ${options.timeoutMs} ms fetching ${url.href}`, error);
    if (options.signal?.aborted) throw new ToolError("CANCELLED", `fetch of ${url.href} cancelled`, { cause: error });
    throw fetchError(`request to ${url.href} failed: ${describeNetworkError(error)}`, error);
  } finally {
    cancelTimer();
    agent.destroy().catch(() => undefined);
  }
}

function header(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(",") : (value ?? "");
}

function describeNetworkError(error: unknown): string {
  const err = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = err.code ?? err.cause?.code;
  const message = err.message ?? String(error);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

/** Drops a body we will not read; undici reports the destroy as an error, which is expected here. */
function discard(stream: { on(event: "error", listener: () => void): unknown; destroy(): void }): void {
  stream.on("error", () => undefined);
  stream.destroy();
}

async function readCapped(stream: AsyncIterable<Buffer> & { on(event: "error", listener: () => void): unknown; destroy(): void }, contentLength: string | string[] | undefined, maxBytes: number): Promise<Buffer> {
  const declared = Number(header(contentLength));
  if (Number.isFinite(declared) && declared > maxBytes) {
    discard(stream);
    throw fetchError(`response is ${declared} bytes, over the ${maxBytes}-byte limit`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    total += chunk.length;
    if (total > maxBytes) {
      discard(stream);
      throw fetchError(`response exceeded the ${maxBytes}-byte limit while downloading`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}

const gunzipAsync = promisify<Buffer, ZlibOptions, Buffer>(gunzip);
const inflateAsync = promisify<Buffer, ZlibOptions, Buffer>(inflate);
const inflateRawAsync = promisify<Buffer, ZlibOptions, Buffer>(inflateRaw);
const brotliAsync = promisify<Buffer, ZlibOptions, Buffer>(brotliDecompress as never);

/** Undoes Content-Encoding (gzip, deflate, br; several in order), capped at maxBytes of output. */
async function decodeBody(raw: Buffer, encodingHeader: string, maxBytes: number): Promise<Buffer> {
  const encodings = encodingHeader
    .split(",")
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e.length > 0 && e !== "identity");
  let data = raw;
  for (const encoding of encodings.reverse()) {
    if (data.length === 0) break;
    const opts: ZlibOptions = { maxOutputLength: maxBytes };
    try {
      if (encoding === "gzip" || encoding === "x-gzip") data = await gunzipAsync(data, opts);
      else if (encoding === "br") data = await brotliAsync(data, opts);
      else if (encoding === "deflate") data = isZlibHeader(data) ? await inflateAsync(data, opts) : await inflateRawAsync(data, opts);
      else throw fetchError(`unsupported Content-Encoding "${encoding}"`);
    } catch (error) {
      if (error instanceof VeilError) throw error;
      if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE" || error instanceof RangeError) {
        throw fetchError(`response exceeded the ${maxBytes}-byte limit after ${encoding} decompression`, error);
      }
      throw fetchError(`could not decode ${encoding} response body: ${(error as Error).message}`, error);
    }
  }
  return data;
}

function isZlibHeader(data: Buffer): boolean {
  return data.length >= 2 && (data[0]! & 0x0f) === 8 && (data[0]! * 256 + data[1]!) % 31 === 0;
}

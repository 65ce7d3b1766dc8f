import { createHash, timingSafeEqual } from "node:crypto";

/**
 * Compares a presented bearer token with the secret in constant time. Both are
 * hashed first so tokens of any length compare without throwing or leaking length.
 */
export function tokenMatches(presented: string | undefined, secret: string): boolean {
  if (!presented) return false;
  const a = createHash("sha256").update(presented).digest();
  return timingSafeEqual(a, secretDigest(secret));
}

/** The secret's hash, computed once (every request compares against it). */
let lastSecret: { secret: string; digest: Buffer } | undefined;
function secretDigest(secret: string): Buffer {
  if (lastSecret?.secret !== secret) lastSecret = { secret, digest: createHash("sha256").update(secret).digest() };
  return lastSecret.digest;
}

export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  return match?.[1]?.trim();
}

/**
 * DNS-rebinding guard: a request must name this server in Host (and Origin, when
 * a browser sends one). Loopback names are accepted for loopback binds.
 */
export function allowedHosts(host: string, port: number, extra: readonly string[] = []): Set<string> {
  const names = new Set<string>([host, ...extra]);
  if (host === "127.0.0.1" || host === "localhost" || host === "::1" || host === "0.0.0.0" || host === "::") {
    for (const name of ["127.0.0.1", "localhost", "[::1]"]) names.add(name);
  }
  const out = new Set<string>();
  for (const name of names) {
    const bracketed = name.includes(":") && !name.startsWith("[") ? `[${name}]` : name;
    out.add(bracketed.toLowerCase());
    out.add(`${bracketed}:${port}`.toLowerCase());
  }
  return out;
}

export function hostAllowed(hostHeader: string | undefined, allowed: Set<string>): boolean {
  if (!hostHeader) return false;
  return allowed.has(hostHeader.toLowerCase());
}

/**
 * A browser's Origin must be this server's own: scheme http (the server speaks no TLS), a
 * name it answers to, and its port (an Origin without one means 80). `allowed` holds
 * `name:port` entries (allowedHosts(), or the Host header when bound to every interface).
 * No Origin (curl, SDKs) is fine; an opaque "null" one is not.
 */
export function originAllowed(origin: string | undefined, allowed: Set<string>): boolean {
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== "http:") return false;
  return allowed.has(`${url.hostname}:${url.port || "80"}`.toLowerCase());
}

/** The Host header as `name:port` (a Host without a port names port 80). */
export function hostWithPort(host: string): string {
  return /:\d+$/.test(host) ? host : `${host}:80`;
}

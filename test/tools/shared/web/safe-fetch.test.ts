import { lookup } from "node:dns/promises";
import { hostname } from "node:os";
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../../../src/base/clock.js";
import { isVeilError, type VeilError } from "../../../../src/errors.js";
import { blockedAddressReason } from "../../../../src/tools/shared/web/address-policy.js";
import { safeFetch, type SafeFetchOptions } from "../../../../src/tools/shared/web/safe-fetch.js";
import { startLoopback, type Loopback } from "./loopback-server.js";

let server: Loopback;
const page = "<html><body><p>hello</p></body></html>";

beforeAll(async () => {
  server = await startLoopback((req, res) => {
    const url = new URL(req.url, "http://x");
    const redirect = /^\/r\/(\d+)$/.exec(url.pathname);
    if (redirect) {
      const n = Number(redirect[1]);
      res.writeHead(302, { location: n > 0 ? `/r/${n - 1}` : "/ok" }).end();
    } else if (url.pathname === "/to") {
      res.writeHead(301, { location: url.searchParams.get("u")! }).end();
    } else if (url.pathname === "/ok") {
      res.writeHead(200, { "content-type": "text/html" }).end(page);
    } else if (url.pathname === "/post") {
      res.writeHead(303, { location: "/echo" }).end();
    } else if (url.pathname === "/echo") {
      res.writeHead(200, { "content-type": "text/plain" }).end(`${req.method} ${req.body}`);
    } else if (url.pathname === "/huge") {
      res.writeHead(200, { "content-type": "text/plain", "content-length": String(3 * 1024 * 1024) });
      res.end(Buffer.alloc(3 * 1024 * 1024, 97));
    } else if (url.pathname === "/huge-chunked") {
      res.writeHead(200, { "content-type": "text/plain" });
      for (let i = 0; i < 40; i++) res.write(Buffer.alloc(64 * 1024, 98));
      res.end();
    } else if (url.pathname === "/bomb") {
      res.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" }).end(gzipSync(Buffer.alloc(8 * 1024 * 1024)));
    } else if (url.pathname === "/slow") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("first part…");
      // never ends: the client's time limit must fire
    } else if (url.pathname === "/gzip") {
      res.writeHead(200, { "content-encoding": "gzip" }).end(gzipSync(page));
    } else if (url.pathname === "/br") {
      res.writeHead(200, { "content-encoding": "br" }).end(brotliCompressSync(page));
    } else if (url.pathname === "/deflate") {
      res.writeHead(200, { "content-encoding": "deflate" }).end(deflateSync(page));
    } else if (url.pathname === "/deflate-raw") {
      res.writeHead(200, { "content-encoding": "deflate" }).end(deflateRawSync(page));
    } else {
      res.writeHead(404).end("nope");
    }
  });
});
afterAll(() => server.close());

function options(overrides: Partial<SafeFetchOptions> = {}): SafeFetchOptions {
  return { allowHosts: ["127.0.0.1"], maxBytes: 1024 * 1024, timeoutMs: 5_000, maxRedirects: 5, clock: systemClock, ...overrides };
}

async function failure(promise: Promise<unknown>): Promise<VeilError> {
  try {
    await promise;
  } catch (error) {
    if (isVeilError(error)) return error;
    throw error;
  }
  throw new Error("expected the fetch to fail");
}

describe("safeFetch refusals without allowHosts", () => {
  const spellings = (port: number) => [
    `http://127.0.0.1:${port}/ok`,
    `http://2130706433:${port}/ok`,
    `http://0x7f.1:${port}/ok`,
    `http://0x7f000001:${port}/ok`,
    `http://0177.0.0.1:${port}/ok`,
    `http://017700000001:${port}/ok`,
    `http://127.1:${port}/ok`,
    `http://127.0.0.1.:${port}/ok`,
    `http://%31%32%37.0.0.1:${port}/ok`,
    `http://[::1]:${port}/ok`,
    `http://[::ffff:127.0.0.1]:${port}/ok`,
    `http://[0:0:0:0:0:ffff:7f00:1]:${port}/ok`,
    `http://localhost:${port}/ok`,
    `http://LOCALHOST.:${port}/ok`,
    `http://foo.localhost:${port}/ok`,
    `http://0:${port}/ok`,
    `http://0.0.0.0:${port}/ok`,
    "http://169.254.169.254/latest/meta-data/",
    "http://[fe80::1]/",
    "http://10.0.0.1/",
    "http://192.168.0.1/",
    "http://100.64.0.1/",
    "http://[fd00::1]/",
  ];

  it("refuses every spelling of a private address before any connection is made", async () => {
    for (const url of spellings(server.port)) {
      const error = await failure(safeFetch(url, options({ allowHosts: [] })));
      expect(error.code, url).toBe("FETCH_BLOCKED");
    }
    expect(server.connections()).toBe(0);
  });

  it("refuses non-http schemes", async () => {
    for (const url of ["file:///etc/passwd", "ftp://example.com/", "gopher://127.0.0.1/", "data:text/plain,hi"]) {
      const error = await failure(safeFetch(url, options({ allowHosts: [] })));
      expect(error.code, url).toBe("FETCH_BLOCKED");
      expect(error.message).toContain("only http and https");
    }
  });

  it("checks DNS answers at connect time (a name that resolves to this machine)", async () => {
    const name = hostname();
    const answers = await lookup(name, { all: true }).catch(() => []);
    if (answers.length === 0 || answers.some((a) => blockedAddressReason(a.address) === null)) return; // host name is public here
    const error = await failure(safeFetch(`http://${name}:${server.port}/ok`, options({ allowHosts: [] })));
    expect(error.code).toBe("FETCH_BLOCKED");
    expect(error.message).toContain(`${name.toLowerCase()} resolves to`);
  });
});

describe("safeFetch with an allowed loopback host", () => {
  it("fetches and follows redirects up to the cap", async () => {
    // /r/4 → /r/3 → … → /r/0 → /ok: five hops, the default cap
    const response = await safeFetch(server.url("/r/4"), options());
    expect(response.status).toBe(200);
    expect(response.redirects).toBe(5);
    expect(response.body.toString()).toBe(page);
  });

  it("stops a redirect chain over the cap with FETCH_ERROR", async () => {
    const error = await failure(safeFetch(server.url("/r/5"), options()));
    expect(error.code).toBe("FETCH_ERROR");
    expect(error.message).toContain("too many redirects: more than 5 hops");
    const tighter = await failure(safeFetch(server.url("/r/2"), options({ maxRedirects: 2 })));
    expect(tighter.message).toContain("more than 2 hops");
  });

  it("re-checks every hop: a redirect to the metadata address, to localhost, to [::1], to file: is refused", async () => {
    const before = server.requests.length;
    for (const target of ["http://169.254.169.254/latest/meta-data/", `http://localhost:${server.port}/ok`, `http://[::1]:${server.port}/ok`, `http://127.0.0.2:${server.port}/ok`, "file:///etc/passwd"]) {
      const error = await failure(safeFetch(server.url(`/to?u=${encodeURIComponent(target)}`), options()));
      expect(error.code, target).toBe("FETCH_BLOCKED");
    }
    expect(server.requests.slice(before).every((r) => r.url.startsWith("/to?"))).toBe(true);
  });

  it("refuses the Veil server's own port even on an allowed host, by literal IP or by name", async () => {
    const before = server.connections();
    const byIp = await failure(safeFetch(server.url("/ok"), options({ selfPort: server.port })));
    expect(byIp.code).toBe("FETCH_BLOCKED");
    expect(byIp.message).toContain("Veil server itself");
    const byName = await failure(safeFetch(`http://localhost:${server.port}/ok`, options({ allowHosts: ["localhost"], selfPort: server.port })));
    expect(byName.code).toBe("FETCH_BLOCKED");
    expect(server.connections()).toBe(before);
  });

  it("turns a 303 after POST into a GET", async () => {
    const response = await safeFetch(server.url("/post"), options({ method: "POST", body: "q=1" }));
    expect(response.body.toString()).toBe("GET ");
  });

  it.each(["/gzip", "/br", "/deflate", "/deflate-raw"])("decodes %s bodies", async (path) => {
    const response = await safeFetch(server.url(path), options());
    expect(response.body.toString()).toBe(page);
  });

  it("caps bytes: declared length, streamed length, and decompressed length", async () => {
    for (const path of ["/huge", "/huge-chunked", "/bomb"]) {
      const error = await failure(safeFetch(server.url(path), options({ maxBytes: 1024 * 1024 })));
      expect(error.code, path).toBe("FETCH_ERROR");
      expect(error.message, path).toContain("1048576-byte limit");
    }
  });

  it("gives up on a body that never ends at the time limit", async () => {
    const error = await failure(safeFetch(server.url("/slow"), options({ timeoutMs: 300 })));
    expect(error.code).toBe("FETCH_ERROR");
    expect(error.message).toContain("timed out after 300 ms");
  });

  it("reports a refused connection as FETCH_ERROR", async () => {
    const closed = await startLoopback((_req, res) => res.end());
    const url = closed.url("/");
    await closed.close();
    const error = await failure(safeFetch(url, options()));
    expect(error.code).toBe("FETCH_ERROR");
    expect(error.message).toMatch(/ECONNREFUSED/);
  });
});

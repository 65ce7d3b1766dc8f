import { gzipSync } from "node:zlib";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/base/clock.js";
import { webFetch, PAGE_SIZE } from "../../../src/tools/builtin/web-fetch.js";
import { SelfAddress } from "../../../src/tools/services.js";
import type { PageCache } from "../../../src/tools/shared/web/page-cache.js";
import type { Settings } from "../../../src/config/types.js";
import { createToolHarness, type HarnessOptions, type ToolHarness } from "../../helpers/tool-context.js";
import { startLoopback, type Loopback } from "../shared/web/loopback-server.js";

let server: Loopback;
let harness: ToolHarness;
const bigText = Array.from({ length: 2_600 }, (_, i) => `Paragraph ${i} ${"lorem ipsum ".repeat(4)}`);
const binary = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 3, 255]);

beforeAll(async () => {
  server = await startLoopback((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    if (path === "/page") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(`<html><head><title>Doc</title><script>alert(1)</script></head><body><h2>Intro</h2><p>Hello <a href="/next">next page</a></p><ul><li>a</li><li>b</li></ul></body></html>`);
    } else if (path === "/big") {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<html><body>${bigText.map((p) => `<p>${p}</p>`).join("")}</body></html>`);
    } else if (path === "/gz") {
      res.writeHead(200, { "content-type": "text/html", "content-encoding": "gzip" }).end(gzipSync("<p>compressed hello</p>"));
    } else if (path === "/data.json") {
      res.writeHead(200, { "content-type": "application/json" }).end('{"a":1,"b":[true,null]}');
    } else if (path === "/plain") {
      res.writeHead(200, { "content-type": "text/plain" }).end("  raw <b>text</b> stays\n");
    } else if (path === "/image.png") {
      res.writeHead(200, { "content-type": "image/png" }).end(binary);
    } else if (path === "/missing") {
      res.writeHead(404, { "content-type": "text/plain" }).end("no such thing");
    } else if (path === "/huge") {
      res.writeHead(200, { "content-type": "text/plain" });
      for (let i = 0; i < 64; i++) res.write(Buffer.alloc(32 * 1024, 120));
      res.end();
    } else if (path === "/slow") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("partial");
    } else if (path.startsWith("/hop/")) {
      const n = Number(path.slice(5));
      res.writeHead(302, { location: n > 0 ? `/hop/${n - 1}` : "/page" }).end();
    } else if (path === "/to-metadata") {
      res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/iam/" }).end();
    } else if (path === "/to-localhost") {
      res.writeHead(307, { location: `http://localhost:${server.port}/page` }).end();
    } else {
      res.writeHead(404).end();
    }
  });
});
afterAll(() => server.close());
afterEach(() => harness?.close());

function requestsTo(path: string): number {
  return server.requests.filter((r) => r.url === path).length;
}

async function withLoopback(webFetchSettings: Partial<Settings["webFetch"]> = {}, options: HarnessOptions = {}): Promise<ToolHarness> {
  harness = await createToolHarness({ ...options, settings: { webFetch: { allowHosts: ["127.0.0.1"], ...webFetchSettings } } });
  return harness;
}

describe("web_fetch text mode", () => {
  it("returns readable text of an HTML page without a page header", async () => {
    await withLoopback();
    const result = await harness.call(webFetch, { url: server.url("/page") });
    expect(result.success).toBe(true);
    expect(result.output).toBe(`Title: Doc\n\n## Intro\n\nHello [next page](${server.url("/next")})\n\n- a\n- b`);
  });

  it("passes non-HTML text through and decodes gzip", async () => {
    await withLoopback();
    expect((await harness.call(webFetch, { url: server.url("/plain") })).output).toBe("  raw <b>text</b> stays\n");
    expect((await harness.call(webFetch, { url: server.url("/gz") })).output).toBe("compressed hello");
  });

  it("paginates at 50000 chars with web_fetch's page header and footers, serving later pages from the cache", async () => {
    await withLoopback();
    const before = requestsTo("/big");
    const first = await harness.call(webFetch, { url: server.url("/big") });
    const header = /^\[Page 1 of (\d+) — total (\d+) chars\]\n\n/.exec(first.output);
    expect(header).not.toBeNull();
    const pages = Number(header![1]);
    const total = Number(header![2]);
    expect(pages).toBe(Math.ceil(total / PAGE_SIZE));
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(first.output).toMatch(/\n\n\[More content available — call web_fetch again with page:2 to read chars 50001–100000 of \d+\]$/);
    const body1 = first.output.slice(header![0].length, first.output.lastIndexOf("\n\n["));
    expect(body1).toHaveLength(PAGE_SIZE);

    const second = await harness.call(webFetch, { url: server.url("/big"), page: 2 });
    expect(second.output.startsWith(`[Page 2 of ${pages} — total ${total} chars]\n\n`)).toBe(true);
    expect(second.details).toMatchObject({ cached: true, page: 2, pages });
    const last = await harness.call(webFetch, { url: server.url("/big"), page: pages });
    expect(last.output.endsWith(`\n\n[End of content — page ${pages} of ${pages}]`)).toBe(true);
    expect(requestsTo("/big") - before).toBe(1);

    const body2 = second.output.slice(second.output.indexOf("]\n\n") + 3, second.output.lastIndexOf("\n\n["));
    const bodyLast = last.output.slice(last.output.indexOf("]\n\n") + 3, last.output.lastIndexOf("\n\n["));
    expect(body1 + body2).toContain("Paragraph 1000 ");
    expect(bodyLast).toContain("Paragraph 2599 ");
  });

  // 300 fetches through the tool: ~17 s on a busy 2-core machine, over half the default 30 s budget.
  it("keeps one page cache for the runtime: each session sees its own pages, all sessions' pages together stay under one bound", async () => {
    await withLoopback();
    const fetches = () => server.requests.filter((r) => r.url.startsWith("/big?")).length;
    const before = fetches();
    for (let i = 0; i < 300; i++) await harness.call(webFetch, { url: server.url(`/big?n=${i}`) }, { sessionId: `sess_${i}` });
    const cache = harness.runtimeResources.peek<PageCache>("web_fetch.pages")!;
    expect(cache.size).toBeLessThanOrEqual(64);
    expect(harness.sessionResources.peek("web_fetch.pages")).toBeUndefined();
    // Another session asking for a page already cached for one fetches it itself.
    const mine = await harness.call(webFetch, { url: server.url("/big?n=299"), page: 2 }, { sessionId: "sess_299" });
    const theirs = await harness.call(webFetch, { url: server.url("/big?n=299"), page: 2 }, { sessionId: "sess_other" });
    expect([mine.details?.cached, theirs.details?.cached]).toEqual([true, false]);
    expect(fetches() - before).toBe(301);
  }, 60_000);

  it("refuses a page beyond the last with a clear error", async () => {
    await withLoopback();
    const only = await harness.call(webFetch, { url: server.url("/page") });
    const result = await harness.call(webFetch, { url: server.url("/page"), page: 2 });
    expect(result.success).toBe(false);
    expect(result.output).toBe(`Error: VALIDATION_ERROR — page 2 is out of range: ${server.url("/page")} has 1 page (${only.output.length} chars at 50000 per page)`);
  });

  it("refetches once the cache entry is older than ten minutes", async () => {
    const clock = new ManualClock();
    await withLoopback({}, { clock });
    const before = requestsTo("/big");
    await harness.call(webFetch, { url: server.url("/big") });
    await clock.advance(9 * 60_000);
    await harness.call(webFetch, { url: server.url("/big"), page: 2 });
    expect(requestsTo("/big") - before).toBe(1);
    await clock.advance(2 * 60_000);
    await harness.call(webFetch, { url: server.url("/big"), page: 2 });
    expect(requestsTo("/big") - before).toBe(2);
  });

  it("refuses binary bodies in text mode and suggests base64", async () => {
    await withLoopback();
    const result = await harness.call(webFetch, { url: server.url("/image.png") });
    expect(result.output).toMatch(/^Error: FETCH_ERROR — .*binary content \(image\/png, 13 bytes\).*mode "base64"$/);
  });

  it("reports HTTP errors with the status", async () => {
    await withLoopback();
    expect((await harness.call(webFetch, { url: server.url("/missing") })).output).toBe(
      `Error: FETCH_ERROR — HTTP 404 from ${server.url("/missing")}: no such thing`,
    );
  });
});

describe("web_fetch json and base64 modes", () => {
  it("pretty-prints JSON", async () => {
    await withLoopback();
    expect((await harness.call(webFetch, { url: server.url("/data.json"), mode: "json" })).output).toBe('{\n  "a": 1,\n  "b": [\n    true,\n    null\n  ]\n}');
  });

  it("says clearly when the body is not JSON", async () => {
    await withLoopback();
    const { output } = await harness.call(webFetch, { url: server.url("/page"), mode: "json" });
    expect(output).toMatch(/^Error: FETCH_ERROR — response from .* is not valid JSON \(content type text\/html\)/);
  });

  it("returns the raw bytes as base64", async () => {
    await withLoopback();
    expect((await harness.call(webFetch, { url: server.url("/image.png"), mode: "base64" })).output).toBe(binary.toString("base64"));
  });
});

describe("web_fetch limits and safety", () => {
  it("stops at the configured byte cap", async () => {
    await withLoopback({ maxBytes: 512 * 1024 });
    expect((await harness.call(webFetch, { url: server.url("/huge") })).output).toBe(
      "Error: FETCH_ERROR — response exceeded the 524288-byte limit while downloading",
    );
  });

  it("stops at the configured time limit", async () => {
    await withLoopback({ timeoutMs: 250 });
    expect((await harness.call(webFetch, { url: server.url("/slow") })).output).toBe(
      `Error: FETCH_ERROR — timed out after 250 ms fetching ${server.url("/slow")}`,
    );
  });

  it("follows redirects up to the configured cap", async () => {
    await withLoopback({ maxRedirects: 2 });
    expect((await harness.call(webFetch, { url: server.url("/hop/1") })).output).toContain("## Intro");
    expect((await harness.call(webFetch, { url: server.url("/hop/2") })).output).toMatch(/^Error: FETCH_ERROR — too many redirects: more than 2 hops/);
  });

  it("refuses redirects to the metadata address and to localhost when only 127.0.0.1 is allowed", async () => {
    await withLoopback();
    expect((await harness.call(webFetch, { url: server.url("/to-metadata") })).output).toBe(
      "Error: FETCH_BLOCKED — 169.254.169.254 is a link-local (169.254.0.0/16) address",
    );
    expect((await harness.call(webFetch, { url: server.url("/to-localhost") })).output).toBe(
      "Error: FETCH_BLOCKED — localhost is this machine (loopback)",
    );
  });

  it("refuses every loopback spelling when allowHosts is empty, without connecting", async () => {
    harness = await createToolHarness();
    const connections = server.connections();
    for (const url of [server.url("/page"), `http://2130706433:${server.port}/page`, `http://0x7f.1:${server.port}/page`, `http://[::ffff:127.0.0.1]:${server.port}/page`, `http://localhost.:${server.port}/page`]) {
      const result = await harness.call(webFetch, { url });
      expect(result.output, url).toMatch(/^Error: FETCH_BLOCKED — /);
    }
    expect(server.connections()).toBe(connections);
  });

  it("refuses the Veil server's own port", async () => {
    await withLoopback({}, { services: { selfAddress: new SelfAddress({ host: "127.0.0.1", port: server.port }) } });
    expect((await harness.call(webFetch, { url: server.url("/page") })).output).toBe(
      `Error: FETCH_BLOCKED — 127.0.0.1:${server.port} is the Veil server itself`,
    );
  });

  it("refuses non-http schemes and rejects malformed URLs", async () => {
    harness = await createToolHarness();
    expect((await harness.call(webFetch, { url: "file:///etc/passwd" })).output).toBe(
      "Error: FETCH_BLOCKED — only http and https URLs may be fetched (got file)",
    );
    expect((await harness.call(webFetch, { url: "not a url" })).output).toBe('Error: VALIDATION_ERROR — not a valid URL: "not a url"');
  });
});

import { readFileSync } from "node:fs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { webSearch } from "../../../src/tools/builtin/web-search.js";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";
import { startLoopback, type Loopback } from "../shared/web/loopback-server.js";

const fixture = (name: string) => readFileSync(new URL(`../../fixtures/ddg/${name}`, import.meta.url), "utf8");

let server: Loopback;
let harness: ToolHarness;

beforeAll(async () => {
  server = await startLoopback((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    const html = { "content-type": "text/html; charset=UTF-8" };
    if (path === "/html/") res.writeHead(200, html).end(fixture("results.html"));
    else if (path === "/none/") res.writeHead(200, html).end(fixture("no-results.html"));
    else if (path === "/anomaly/") res.writeHead(202, html).end(fixture("anomaly.html"));
    else if (path === "/throttled/") res.writeHead(429, html).end("<html><body>Too Many Requests</body></html>");
    else if (path === "/accepted/") res.writeHead(202, html).end("");
    else if (path === "/forbidden/") res.writeHead(403, html).end("<html><body>Forbidden</body></html>");
    else if (path === "/changed/") res.writeHead(200, html).end("<html><body><main><article class='hit'><h2>Tokio</h2></article></main></body></html>");
    else if (path === "/broken/") res.writeHead(500, html).end("oops");
    else if (path === "/to-metadata/") res.writeHead(302, { location: "http://169.254.169.254/" }).end();
    else res.writeHead(404).end();
  });
});
afterAll(() => server.close());
afterEach(() => harness?.close());

async function searchAt(path: string, input: Record<string, unknown> = { query: "rust async runtime" }) {
  harness = await createToolHarness({ settings: { webSearch: { endpoint: server.url(path) } } });
  return harness.call(webSearch, input);
}

describe("web_search", () => {
  it("posts the query to the configured endpoint (implicitly allowed) and lists decoded results", async () => {
    const before = server.requests.length;
    const result = await searchAt("/html/");
    expect(result.success).toBe(true);
    const request = server.requests[before]!;
    expect(request.method).toBe("POST");
    expect(new URLSearchParams(request.body).get("q")).toBe("rust async runtime");
    expect(result.output.split("\n\n")[0]).toBe('Search results for "rust async runtime" (5):');
    expect(result.output).toContain(
      "1. Tokio - An asynchronous Rust runtime\n   https://tokio.rs/\n   Tokio is an asynchronous runtime for the Rust programming language.",
    );
    expect(result.output).toContain("5. Async/await - Wikipedia\n   https://en.wikipedia.org/wiki/Async%2Fawait\n");
    expect(result.output).not.toContain("Sponsored");
    expect(result.output).not.toContain("duckduckgo.com/l/");
  });

  it("honours numResults and caps it at 10", async () => {
    expect((await searchAt("/html/", { query: "rust", numResults: 2 })).output).toMatch(/^Search results for "rust" \(2\):\n\n1\. .*\n[\s\S]*\n\n2\. /);
    expect((await searchAt("/html/", { query: "rust", numResults: 50 })).output).toMatch(/^Search results for "rust" \(6\):/);
  });

  it("says so when there are no results", async () => {
    expect((await searchAt("/none/", { query: "qwxzvplkjh zzqv" })).output).toBe('No results for "qwxzvplkjh zzqv".');
  });

  it("names the bot challenge page as blocked", async () => {
    const result = await searchAt("/anomaly/");
    expect(result.success).toBe(false);
    expect(result.output).toMatch(/^Error: SEARCH_ERROR — blocked: the search endpoint answered with its bot-challenge \(anomaly\) page \(HTTP 202\)/);
  });

  it.each([["/throttled/", 429], ["/accepted/", 202], ["/forbidden/", 403]])("names %s (HTTP %i) as rate-limited", async (path, status) => {
    expect((await searchAt(path)).output).toMatch(new RegExp(`^Error: SEARCH_ERROR — rate-limited: the search endpoint answered HTTP ${status} instead of results`));
  });

  it("names an unrecognised page as changed rather than returning an empty list", async () => {
    expect((await searchAt("/changed/")).output).toMatch(/^Error: SEARCH_ERROR — changed page: .* has no result markup and is not a "no results" page/);
  });

  it("reports other HTTP failures", async () => {
    expect((await searchAt("/broken/")).output).toBe("Error: SEARCH_ERROR — the search endpoint answered HTTP 500");
  });

  it("does not extend the endpoint's exemption to where it redirects", async () => {
    expect((await searchAt("/to-metadata/")).output).toBe("Error: FETCH_BLOCKED — 169.254.169.254 is a link-local (169.254.0.0/16) address");
  });

  it("reports an unreachable endpoint as SEARCH_ERROR", async () => {
    const gone = await startLoopback((_req, res) => res.end());
    const endpoint = gone.url("/html/");
    await gone.close();
    harness = await createToolHarness({ settings: { webSearch: { endpoint } } });
    expect((await harness.call(webSearch, { query: "x" })).output).toMatch(/^Error: SEARCH_ERROR — search request failed: request to .* failed: .*ECONNREFUSED/);
  });
});

import { Type, type Static } from "../../schema.js";
import { defineTool } from "../define.js";
import { ToolError, isVeilError } from "../../errors.js";
import { DEFAULT_WEB_SEARCH_ENDPOINT } from "../../config/defaults.js";

const DEFAULT_RESULTS = 5;
const MAX_RESULTS = 10;
/** DuckDuckGo answers throttled clients with these instead of results. */
const RATE_LIMIT_STATUSES = new Set([202, 403, 429]);
const BROWSER_UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36";

const Params = Type.Object({
  query: Type.String({ minLength: 1 }),
  numResults: Type.Optional(
    Type.Integer({ minimum: 1, description: `Default ${DEFAULT_RESULTS}, max ${MAX_RESULTS} (more is capped)` }),
  ),
});

export const webSearch = defineTool({
  name: "web_search",
  description: "DuckDuckGo search: titles, URLs, snippets.",
  params: Params,
  readOnly: true,
  async execute(input: Static<typeof Params>, ctx) {
    // Imported on first use: undici and htmlparser2 stay out of start-up.
    const { fetchOptionsFromContext, safeFetch, decodeText, parseDdgResults } = await import("../shared/web/lazy.js");
    const query = input.query.trim();
    if (query.length === 0) throw new ToolError("VALIDATION_ERROR", "query must not be blank");
    const limit = Math.min(input.numResults ?? DEFAULT_RESULTS, MAX_RESULTS);
    const endpoint = ctx.settings.webSearch?.endpoint || DEFAULT_WEB_SEARCH_ENDPOINT;
    let endpointHost: string;
    try {
      endpointHost = new URL(endpoint).hostname;
    } catch {
      throw new ToolError("SEARCH_ERROR", `the configured search endpoint is not a valid URL: ${JSON.stringify(endpoint)} (settings.webSearch.endpoint)`);
    }

    let response;
    try {
      response = await safeFetch(endpoint, {
        ...fetchOptionsFromContext(ctx, [endpointHost]),
        method: "POST",
        body: new URLSearchParams({ q: query, b: "", kl: "" }).toString(),
        headers: { "content-type": "application/x-www-form-urlencoded", "user-agent": BROWSER_UA, accept: "text/html" },
      });
    } catch (error) {
      if (isVeilError(error) && error.code === "FETCH_ERROR") {
        throw new ToolError("SEARCH_ERROR", `search request failed: ${error.message}`, { cause: error });
      }
      throw error;
    }

    const html = decodeText(response.body, response.contentType, true);
    const page = parseDdgResults(html);
    if (page.challenge && page.results.length === 0) {
      throw new ToolError(
        "SEARCH_ERROR",
        `blocked: the search endpoint answered with its bot-challenge (anomaly) page (HTTP ${response.status}) instead of results; wait before searching again`,
        { details: { cause: "blocked", status: response.status } },
      );
    }
    if (RATE_LIMIT_STATUSES.has(response.status)) {
      throw new ToolError(
        "SEARCH_ERROR",
        `rate-limited: the search endpoint answered HTTP ${response.status} instead of results; wait before searching again`,
        { details: { cause: "rate_limited", status: response.status } },
      );
    }
    if (response.status >= 400) {
      throw new ToolError("SEARCH_ERROR", `the search endpoint answered HTTP ${response.status}`, { details: { cause: "http_error", status: response.status } });
    }
    if (page.results.length === 0) {
      if (page.noResults) return { output: `No results for "${query}".`, details: { query, results: [] } };
      throw new ToolError(
        "SEARCH_ERROR",
        page.resultBlocks > 0
          ? `changed page: ${page.resultBlocks} result blocks were found but none had a readable title and link; the results page layout may have changed`
          : `changed page: the response from ${response.finalUrl} (HTTP ${response.status}, ${response.body.length} bytes) has no result markup and is not a "no results" page; the results page layout may have changed`,
        { details: { cause: "unrecognised_page", status: response.status } },
      );
    }

    const results = page.results.slice(0, limit);
    const lines = results.map((r, i) => `${i + 1}. ${r.title}\n   ${r.url}${r.snippet ? `\n   ${r.snippet}` : ""}`);
    return {
      output: `Search results for "${query}" (${results.length}):\n\n${lines.join("\n\n")}`,
      details: { query, results },
    };
  },
});

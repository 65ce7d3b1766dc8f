import { Type, type Static } from "../../schema.js";
import { defineTool } from "../define.js";
import { ToolError } from "../../errors.js";
import type { ToolContext } from "../types.js";
import { preview } from "../format.js";
import type { FetchedResponse } from "../shared/web/safe-fetch.js";
import { PageCache, type CachedDocument } from "../shared/web/page-cache.js";

/** Text-mode page size: web_fetch answers at most this many characters per page. */
export const PAGE_SIZE = 50_000;
/** json and base64 are not paginated; their output stops here. */
const MAX_UNPAGED_CHARS = PAGE_SIZE;
const PAGE_CACHE_KEY = "web_fetch.pages";
const web = () => import("../shared/web/lazy.js");

const Params = Type.Object({
  url: Type.String({ minLength: 1 }),
  mode: Type.Optional(
    Type.Unsafe<"text" | "json" | "base64">({
      type: "string",
      enum: ["text", "json", "base64"],
      description: '"text" (default, HTML tags stripped), "json" (parsed + pretty-printed) or "base64"',
    }),
  ),
  page: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: `1-indexed; text mode is paginated at ${PAGE_SIZE} chars per page`,
    }),
  ),
});

export const webFetch = defineTool({
  name: "web_fetch",
  description:
    "Fetch a URL (private addresses refused).",
  params: Params,
  readOnly: true,
  async execute(input: Static<typeof Params>, ctx) {
    const mode = input.mode ?? "text";
    const { parseFetchUrl, decodeText, mimeType } = await web();
    const url = parseFetchUrl(input.url);
    if (mode === "text") return fetchText(url, input.page ?? 1, ctx);

    const response = await fetchChecked(url.href, ctx);
    const details = responseDetails(response, mode);
    if (mode === "json") {
      const text = decodeText(response.body, response.contentType).replace(/^\uFEFF/, "");
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (error) {
        throw new ToolError(
          "FETCH_ERROR",
          `response from ${response.finalUrl} is not valid JSON (content type ${mimeType(response.contentType) || "none"}): ` +
            `${(error as Error).message}. Body starts: ${JSON.stringify(preview(text, 120))}`,
        );
      }
      const pretty = JSON.stringify(value, null, 2) ?? "null";
      if (pretty.length <= MAX_UNPAGED_CHARS) return { output: pretty, details };
      return {
        output:
          `${pretty.slice(0, MAX_UNPAGED_CHARS)}\n\n[Output truncated: showing first ${MAX_UNPAGED_CHARS} of ${pretty.length} chars. ` +
          `json mode is not paginated; call web_fetch with mode "text" and page:N to read the whole document.]`,
        details: { ...details, truncated: true },
      };
    }
    const encoded = response.body.toString("base64");
    if (encoded.length > MAX_UNPAGED_CHARS) {
      throw new ToolError(
        "FETCH_ERROR",
        `response from ${response.finalUrl} is ${response.body.length} bytes; base64 mode returns at most ` +
          `${(MAX_UNPAGED_CHARS / 4) * 3} bytes (${MAX_UNPAGED_CHARS} chars). Download large files with a shell command instead.`,
      );
    }
    return { output: encoded, details };
  },
});

async function fetchText(url: URL, page: number, ctx: ToolContext) {
  // One cache for the runtime, so its size bound holds however many sessions fetch; each
  // session still only sees the pages it fetched itself.
  const cache = ctx.runtime.get(PAGE_CACHE_KEY, () => new PageCache());
  const key = `${ctx.sessionId} ${url.href}`;
  let doc = cache.get(key, ctx.clock.now());
  const cached = doc !== undefined;
  if (!doc) {
    const response = await fetchChecked(url.href, ctx);
    const converted = (await web()).responseToText(response);
    doc = {
      url: url.href,
      finalUrl: response.finalUrl,
      status: response.status,
      contentType: response.contentType,
      bytes: response.body.length,
      text: converted.length > 0 ? converted : `(${response.finalUrl} returned no readable text — HTTP ${response.status}, ${response.body.length} bytes)`,
    };
    cache.set(key, doc, ctx.clock.now());
  }
  return { output: renderPage(doc, page), details: { ...docDetails(doc), page, pages: pageCount(doc.text), cached } };
}

function pageCount(text: string): number {
  return Math.max(1, Math.ceil(text.length / PAGE_SIZE));
}

/** One page with web_fetch's page header and footer; a single-page document is returned bare. */
export function renderPage(doc: CachedDocument, page: number): string {
  const total = doc.text.length;
  const pages = pageCount(doc.text);
  if (page > pages) {
    throw new ToolError(
      "VALIDATION_ERROR",
      `page ${page} is out of range: ${doc.url} has ${pages} page${pages === 1 ? "" : "s"} (${total} chars at ${PAGE_SIZE} per page)`,
    );
  }
  if (pages === 1) return doc.text;
  const start = boundary(doc.text, (page - 1) * PAGE_SIZE);
  const end = boundary(doc.text, page * PAGE_SIZE);
  const body = doc.text.slice(start, end);
  const footer =
    page < pages
      ? `[More content available — call web_fetch again with page:${page + 1} to read chars ${end + 1}–${Math.min(total, boundary(doc.text, (page + 1) * PAGE_SIZE))} of ${total}]`
      : `[End of content — page ${page} of ${pages}]`;
  return `[Page ${page} of ${pages} — total ${total} chars]\n\n${body}\n\n${footer}`;
}

/** A cut position that does not split a surrogate pair. */
function boundary(text: string, index: number): number {
  if (index <= 0) return 0;
  if (index >= text.length) return text.length;
  const code = text.charCodeAt(index - 1);
  return code >= 0xd800 && code <= 0xdbff ? index + 1 : index;
}

/** Fetches and turns HTTP error statuses into FETCH_ERROR. */
async function fetchChecked(url: string, ctx: ToolContext): Promise<FetchedResponse> {
  const { safeFetch, fetchOptionsFromContext, decodeText } = await web();
  const response = await safeFetch(url, fetchOptionsFromContext(ctx));
  if (response.status >= 400) {
    const text = decodeText(response.body, response.contentType).replace(/\s+/g, " ").trim();
    throw new ToolError(
      "FETCH_ERROR",
      `HTTP ${response.status} from ${response.finalUrl}${text ? `: ${preview(text, 300)}` : ""}`,
      { details: { status: response.status } },
    );
  }
  return response;
}

function responseDetails(response: FetchedResponse, mode: string): Record<string, unknown> {
  return {
    mode,
    url: response.requestedUrl,
    finalUrl: response.finalUrl,
    status: response.status,
    contentType: response.contentType,
    bytes: response.body.length,
    redirects: response.redirects,
  };
}

function docDetails(doc: CachedDocument): Record<string, unknown> {
  return { mode: "text", url: doc.url, finalUrl: doc.finalUrl, status: doc.status, contentType: doc.contentType, bytes: doc.bytes, totalChars: doc.text.length };
}

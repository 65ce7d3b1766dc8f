import { Parser } from "htmlparser2";

/**
 * Reads DuckDuckGo's HTML results page (the `html.duckduckgo.com/html/` endpoint):
 * `div.result` blocks holding `a.result__a` (title + link), `a.result__snippet`
 * and `a.result__url`. Links go through `/l/?uddg=<target>` redirects, decoded here.
 * Also recognises the anomaly (bot challenge) page and the "No results." page, so a
 * caller can tell "nothing found" from "blocked" from "layout changed".
 */

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface ParsedResultsPage {
  results: SearchResult[];
  /** The page says there are no results. */
  noResults: boolean;
  /** DuckDuckGo's bot challenge ("anomaly") page. */
  challenge: boolean;
  /** How many `div.result` blocks were seen (ads included). */
  resultBlocks: number;
}

const CHALLENGE_MARKERS = ["anomaly-modal", "challenge-form", "/anomaly.js", "bots use duckduckgo too", "anomaly_modal"];
const DDG_BASE = "https://duckduckgo.com/";

interface Draft {
  ad: boolean;
  title: string;
  href: string | null;
  snippet: string;
  displayUrl: string;
}

function classes(attribs: Record<string, string>): string[] {
  return (attribs.class ?? "").split(/\s+/).filter(Boolean);
}

/** The real target of a result link: the `uddg` parameter of a `/l/` redirect, else the link itself. */
export function decodeResultUrl(href: string): string | null {
  let url: URL;
  try {
    url = new URL(href.trim(), DDG_BASE);
  } catch {
    return null;
  }
  const target = url.searchParams.get("uddg");
  if (target) return target;
  if (/(^|\.)duckduckgo\.com$/.test(url.hostname) && (url.pathname === "/y.js" || url.pathname.startsWith("/l/"))) return null;
  return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
}

export function parseDdgResults(html: string): ParsedResultsPage {
  const lower = html.slice(0, 200_000).toLowerCase();
  const challenge = CHALLENGE_MARKERS.some((m) => lower.includes(m));
  const results: SearchResult[] = [];
  let noResults = false;
  let resultBlocks = 0;

  let draft: Draft | null = null;
  let resultDivDepth = 0;
  let capture: { field: "title" | "snippet" | "displayUrl"; tag: string; depth: number } | null = null;

  const finish = () => {
    if (!draft) return;
    const shown = clean(draft.displayUrl);
    const url = draft.href ? decodeResultUrl(draft.href) : /^[\w.-]+\.[a-z]{2,}(\/\S*)?$/i.test(shown) ? `https://${shown}` : null;
    const title = clean(draft.title);
    if (!draft.ad && url && title) results.push({ title, url, snippet: clean(draft.snippet) });
    draft = null;
  };

  const parser = new Parser(
    {
      onopentag(name, attribs) {
        const cls = classes(attribs);
        if (cls.includes("no-results") || cls.includes("result--no-result")) noResults = true;
        if (capture && name === capture.tag) capture.depth++;
        if (name === "div") {
          if (draft) resultDivDepth++;
          else if (cls.includes("result") && !cls.includes("result--no-result")) {
            resultBlocks++;
            draft = { ad: cls.includes("result--ad"), title: "", href: null, snippet: "", displayUrl: "" };
            resultDivDepth = 1;
          }
        }
        if (!draft || capture) return;
        if (cls.includes("result__a")) {
          if (draft.href === null) draft.href = attribs.href ?? null;
          capture = { field: "title", tag: name, depth: 1 };
        } else if (cls.includes("result__snippet")) {
          capture = { field: "snippet", tag: name, depth: 1 };
        } else if (cls.includes("result__url") && name === "a") {
          capture = { field: "displayUrl", tag: name, depth: 1 };
        }
      },
      ontext(text) {
        if (draft && capture) draft[capture.field] += text;
      },
      onclosetag(name) {
        if (capture && name === capture.tag && --capture.depth === 0) {
          if (draft && capture.field !== "displayUrl") draft[capture.field] += " ";
          capture = null;
        }
        if (name === "div" && draft && --resultDivDepth === 0) finish();
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  finish();
  return { results, noResults: noResults && results.length === 0, challenge, resultBlocks };
}

function clean(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

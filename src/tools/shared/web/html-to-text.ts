import { Parser } from "htmlparser2";

/**
 * Readable text from HTML, as light markdown: headings (`#`), links (`[text](url)`),
 * list items (`-`, `1.`), table cells (`|`), code blocks (```), paragraphs separated
 * by blank lines. Script, style, noscript, svg, template and the like are dropped.
 * One streaming pass with htmlparser2; no DOM is built.
 */

const SKIP = new Set(["script", "style", "noscript", "svg", "math", "template", "iframe", "object", "embed", "canvas", "select", "datalist"]);
const BLOCK = new Set([
  "p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "form", "fieldset", "figure",
  "figcaption", "address", "blockquote", "dl", "dt", "dd", "table", "thead", "tbody", "tfoot", "caption",
  "details", "summary", "center", "legend", "body", "html", "ul", "ol", "menu",
]);
/** Whitespace other than single spaces: only then does text need collapsing. */
const NEEDS_COLLAPSE = /[\t\n\r\f\v\u00a0]| {2}/;
const VOID = new Set(["br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr", "param"]);

interface LinkFrame {
  href: string | null;
}

interface ListFrame {
  ordered: boolean;
  counter: number;
}

export interface HtmlToTextResult {
  title: string | null;
  text: string;
}

/** Converts an HTML document to readable text; `baseUrl` resolves relative links. */
export function htmlToText(html: string, baseUrl?: string): HtmlToTextResult {
  // Appending to one string is cheap in V8 (ropes); a link's label goes to `label` until the link closes.
  let out = "";
  let label: string | null = null;
  let pending = 0;
  let lastChar = "\n";
  let skipDepth = 0;
  let skipTag: string | null = null;
  let preDepth = 0;
  let inTitle = false;
  let title = "";
  let cellIndex = 0;
  const links: LinkFrame[] = [];
  const lists: ListFrame[] = [];

  const write = (text: string) => {
    if (label !== null) label += text;
    else out += text;
  };
  const flushPending = () => {
    if (pending === 0) return;
    if (out.length > 0 || (label !== null && label.length > 0)) write("\n".repeat(pending));
    pending = 0;
    lastChar = "\n";
  };
  const emit = (text: string) => {
    if (text.length === 0) return;
    flushPending();
    write(text);
    lastChar = text[text.length - 1]!;
  };
  const block = (n: number) => {
    if (out.length > 0 || (label !== null && label.length > 0)) pending = Math.max(pending, n);
  };

  const resolveHref = (href: string | undefined): string | null => {
    if (!href) return null;
    const trimmed = href.trim();
    if (trimmed.startsWith("#") || /^(?:javascript|data|vbscript):/i.test(trimmed)) return null;
    try {
      return baseUrl ? new URL(trimmed, baseUrl).href : trimmed;
    } catch {
      return trimmed;
    }
  };

  const parser = new Parser(
    {
      onopentag(name, attribs) {
        if (name === "title" && skipTag === null && title === "") {
          inTitle = true;
          return;
        }
        if (skipDepth > 0) {
          if (name === skipTag) skipDepth++;
          return;
        }
        if (SKIP.has(name)) {
          if (VOID.has(name)) return;
          skipDepth = 1;
          skipTag = name;
          return;
        }
        if (/^h[1-6]$/.test(name)) {
          block(2);
          emit(`${"#".repeat(Number(name[1]))} `);
        } else if (name === "li") {
          block(1);
          const list = lists.at(-1);
          const indent = "  ".repeat(Math.max(0, lists.length - 1));
          if (list?.ordered) emit(`${indent}${++list.counter}. `);
          else emit(`${indent}- `);
        } else if (name === "ul" || name === "ol" || name === "menu") {
          block(lists.length === 0 ? 2 : 1);
          const start = Number(attribs.start);
          lists.push({ ordered: name === "ol", counter: Number.isFinite(start) ? start - 1 : 0 });
        } else if (name === "pre") {
          block(2);
          emit("```\n");
          preDepth++;
        } else if (name === "br") {
          if (preDepth > 0) emit("\n");
          else block(1);
        } else if (name === "hr") {
          block(2);
          emit("---");
          block(2);
        } else if (name === "tr") {
          block(1);
          cellIndex = 0;
        } else if (name === "td" || name === "th") {
          if (cellIndex++ > 0) emit(" | ");
        } else if (name === "a") {
          flushPending();
          const href = links.length === 0 ? resolveHref(attribs.href) : null;
          links.push({ href });
          if (href !== null) label = "";
        } else if (name === "img") {
          const alt = (attribs.alt ?? "").replace(/\s+/g, " ").trim();
          if (alt) emitInline(`[image: ${alt}]`);
        } else if (name === "code" && preDepth === 0) {
          emitInline("`");
        } else if (BLOCK.has(name)) {
          block(name === "div" || name === "dt" || name === "dd" || name === "summary" ? 1 : 2);
        }
      },
      ontext(data) {
        if (inTitle) {
          title += data;
          return;
        }
        if (skipDepth > 0) return;
        if (preDepth > 0) {
          emit(data);
          return;
        }
        let text = NEEDS_COLLAPSE.test(data) ? data.replace(/\s+/g, " ") : data;
        if ((pending > 0 || lastChar === "\n" || lastChar === " ") && text.charCodeAt(0) === 32) text = text.slice(1);
        emit(text);
      },
      onclosetag(name) {
        if (name === "title" && inTitle) {
          inTitle = false;
          return;
        }
        if (skipDepth > 0) {
          if (name === skipTag && --skipDepth === 0) skipTag = null;
          return;
        }
        if (/^h[1-6]$/.test(name)) block(2);
        else if (name === "li") block(1);
        else if (name === "ul" || name === "ol" || name === "menu") {
          lists.pop();
          block(lists.length === 0 ? 2 : 1);
        } else if (name === "pre") {
          preDepth = Math.max(0, preDepth - 1);
          if (lastChar !== "\n") emit("\n");
          emit("```");
          block(2);
        } else if (name === "a") {
          const frame = links.pop();
          if (frame && frame.href !== null && links.length === 0 && label !== null) {
            const inner = label;
            label = null;
            const text = inner.replace(/\s+/g, " ").trim().replace(/^\[(image: .*)\]$/, "$1");
            if (text) emit(`[${text}](${frame.href})`);
            else if (inner) emit(inner);
          }
        } else if (name === "code" && preDepth === 0) {
          emitInline("`");
        } else if (name === "tr") {
          block(1);
        } else if (BLOCK.has(name)) {
          block(name === "div" || name === "dt" || name === "dd" || name === "summary" ? 1 : 2);
        }
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );

  function emitInline(text: string) {
    if (pending === 0 && lastChar !== " " && lastChar !== "\n" && text.startsWith("[")) emit(" ");
    emit(text);
  }

  parser.write(html);
  parser.end();

  if (label !== null) out += label;
  const text = out.replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
  const cleanTitle = title.replace(/\s+/g, " ").trim();
  return { title: cleanTitle || null, text };
}

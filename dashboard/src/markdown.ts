/**
 * Markdown → DOM nodes, built with createElement and text nodes only: raw HTML in model
 * output stays text, and links or images whose URL is not http(s)/mailto (or a data:
 * image) are shown as their source text. Covers what models write: headings, paragraphs,
 * fenced code, lists (nested by indent), quotes, tables, rules, and inline code, emphasis,
 * links, images, bare URLs.
 */
import { h } from "./dom.js";

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?/;
const LIST_ITEM = /^( *)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_SEPARATOR = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

export function renderMarkdown(source: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  for (const node of blocks(source.replace(/\r\n?/g, "\n").split("\n"))) fragment.appendChild(node);
  return fragment;
}

function blocks(lines: string[]): Node[] {
  const out: Node[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.trim() === "") {
      i++;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1]!;
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i]!.trimStart().startsWith(marker)) body.push(lines[i++]!);
      i++;
      const code = h("code", fence[2] ? { class: `language-${fence[2]}` } : null, body.join("\n"));
      out.push(h("pre", { class: "code" }, code));
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const level = Math.min(6, heading[1]!.length + 2) as 3 | 4 | 5 | 6;
      out.push(h(`h${level}`, null, ...inline(heading[2]!)));
      i++;
      continue;
    }
    if (RULE.test(line)) {
      out.push(h("hr"));
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const body: string[] = [];
      while (i < lines.length && QUOTE.test(lines[i]!)) body.push(lines[i++]!.replace(QUOTE, ""));
      out.push(h("blockquote", null, ...blocks(body)));
      continue;
    }
    if (LIST_ITEM.test(line)) {
      i = list(lines, i, out);
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEPARATOR.test(lines[i + 1]!) && lines[i + 1]!.includes("-")) {
      i = table(lines, i, out);
      continue;
    }
    const para: string[] = [];
    while (i < lines.length && lines[i]!.trim() !== "" && !startsBlock(lines[i]!)) para.push(lines[i++]!);
    if (para.length === 0) para.push(lines[i++]!);
    out.push(h("p", null, ...inline(para.join("\n"))));
  }
  return out;
}

function startsBlock(line: string): boolean {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || LIST_ITEM.test(line);
}

function list(lines: string[], start: number, out: Node[]): number {
  const first = LIST_ITEM.exec(lines[start]!)!;
  const indent = first[1]!.length;
  const ordered = /\d/.test(first[2]!);
  const el = ordered ? h("ol", Number.parseInt(first[2]!, 10) > 1 ? { start: Number.parseInt(first[2]!, 10) } : null) : h("ul");
  let i = start;
  while (i < lines.length) {
    const match = LIST_ITEM.exec(lines[i]!);
    if (!match || match[1]!.length !== indent || /\d/.test(match[2]!) !== ordered) break;
    const body = [match[3]!];
    i++;
    // Continuation and nested lines are indented past the marker; a blank line followed by one continues too.
    while (i < lines.length) {
      const next = lines[i]!;
      const nextIndent = next.length - next.trimStart().length;
      if (next.trim() === "") {
        const after = lines[i + 1];
        if (after !== undefined && after.trim() !== "" && after.length - after.trimStart().length > indent) {
          body.push("");
          i++;
          continue;
        }
        break;
      }
      if (nextIndent <= indent && (LIST_ITEM.test(next) || startsBlock(next))) break;
      body.push(next.slice(Math.min(nextIndent, indent + 2)));
      i++;
    }
    const content = blocks(body);
    // A tight item is just its text, not a paragraph.
    const only = content.length === 1 && content[0] instanceof HTMLParagraphElement ? Array.from(content[0].childNodes) : content;
    el.appendChild(h("li", null, ...only));
  }
  out.push(el);
  return i;
}

function table(lines: string[], start: number, out: Node[]): number {
  const cells = (line: string) =>
    line
      .trim()
      .replace(/^\|/, "")
      .replace(/\|$/, "")
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim().replace(/\\\|/g, "|"));
  const head = cells(lines[start]!);
  const rows: string[][] = [];
  let i = start + 2;
  while (i < lines.length && lines[i]!.includes("|") && lines[i]!.trim() !== "") rows.push(cells(lines[i++]!));
  out.push(
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        null,
        h("thead", null, h("tr", null, head.map((cell) => h("th", null, ...inline(cell))))),
        h("tbody", null, rows.map((row) => h("tr", null, head.map((_, c) => h("td", null, ...inline(row[c] ?? "")))))),
      ),
    ),
  );
  return i;
}

const INLINE =
  /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|!\[([^\]\n]*)\]\(([^)\s]+)(?:\s+"[^"\n]*")?\)|\[([^\]\n]+)\]\(([^)\s]+)(?:\s+"[^"\n]*")?\)|\*\*(?=\S)([\s\S]+?)\*\*|(?<!\w)__(?=\S)([\s\S]+?)__(?!\w)|~~(?=\S)([\s\S]+?)~~|\*([^\s*]|[^\s*][\s\S]*?[^\s*])\*|(?<![\w])_([^\s_]|[^\s_][\s\S]*?[^\s_])_(?![\w])|\b(https?:\/\/[^\s<>()]*[^\s<>().,;:!?'"\]])|\\([\\`*_{}[\]()#+\-.!|~>])|\n/g;

export function inline(text: string): Node[] {
  const out: Node[] = [];
  let last = 0;
  INLINE.lastIndex = 0;
  for (let match = INLINE.exec(text); match; match = INLINE.exec(text)) {
    if (match.index > last) out.push(document.createTextNode(text.slice(last, match.index)));
    last = INLINE.lastIndex;
    const [whole, , code, imgAlt, imgUrl, linkText, linkUrl, strong, strong2, strike, em, em2, bare, escaped] = match;
    // A nested call would reset the shared lastIndex; remember where we are.
    const resume = INLINE.lastIndex;
    if (code !== undefined) out.push(h("code", null, code.replace(/^ (.*) $/s, "$1")));
    else if (imgUrl !== undefined) out.push(image(imgAlt ?? "", imgUrl, whole));
    else if (linkUrl !== undefined) out.push(link(linkUrl, inline(linkText!), whole));
    else if (strong !== undefined || strong2 !== undefined) out.push(h("strong", null, ...inline(strong ?? strong2!)));
    else if (strike !== undefined) out.push(h("del", null, ...inline(strike)));
    else if (em !== undefined || em2 !== undefined) out.push(h("em", null, ...inline(em ?? em2!)));
    else if (bare !== undefined) out.push(link(bare, [document.createTextNode(bare)], bare));
    else if (escaped !== undefined) out.push(document.createTextNode(escaped));
    else out.push(h("br"));
    INLINE.lastIndex = resume;
  }
  if (last < text.length) out.push(document.createTextNode(text.slice(last)));
  return out;
}

/** http, https and mailto only; anything else (javascript:, data:, vbscript:, relative tricks) is not a link. */
export function safeHref(url: string): string | null {
  try {
    const parsed = new URL(url, window.location.href);
    if (!["http:", "https:", "mailto:"].includes(parsed.protocol)) return null;
    if (!/^(https?:|mailto:)/i.test(url.trim())) return null;
    return parsed.href;
  } catch {
    return null;
  }
}

function link(url: string, children: Node[], source: string): Node {
  const href = safeHref(url);
  if (!href) return document.createTextNode(source);
  return h("a", { href, target: "_blank", rel: "noopener noreferrer nofollow" }, ...children);
}

/** Only inline data: images are shown (nothing is fetched from elsewhere); other images become links. */
function image(alt: string, url: string, source: string): Node {
  if (/^data:image\/(png|jpe?g|gif|webp);base64,[a-z0-9+/=\s]+$/i.test(url)) return h("img", { src: url, alt, class: "inline-image" });
  return link(url, [document.createTextNode(alt ? `image: ${alt}` : url)], source);
}

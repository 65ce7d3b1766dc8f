import { Tokenizer, type TokenizerCallbacks } from "htmlparser2";

/**
 * The element tree as htmlparser2's Parser reports it in HTML mode, driven from the
 * lower-level Tokenizer: text is handed over as indices into the source (no slice per
 * text node), only the attributes a caller asks for are collected, and no per-tag
 * objects are made. Tags open and close exactly as the Parser would report them (its
 * rule tables below are copied from htmlparser2 10).
 */

/** The attributes a reader of the tree uses; the first occurrence of each wins. */
export interface Attribs {
  href?: string;
  alt?: string;
  start?: string;
}

export interface TreeEvents {
  openTag(name: string, attribs: Attribs): void;
  closeTag(name: string): void;
  /** Text data[start, end): `data` is the source, or a decoded entity. */
  text(data: string, start: number, end: number): void;
}

/** Which attribute each tag's readers need. */
const WANTED_ATTRIBUTE = new Map<string, keyof Attribs>([["a", "href"], ["img", "alt"], ["ul", "start"], ["ol", "start"], ["menu", "start"]]);

/** Attributes of a tag none of whose attributes are wanted: never written to. */
const NO_ATTRIBS: Attribs = Object.freeze({});

const P_TAG = new Set(["p"]);
const FORM_TAGS = new Set(["input", "option", "optgroup", "select", "button", "datalist", "textarea"]);
const TABLE_SECTION_TAGS = new Set(["thead", "tbody"]);
const DD_DT_TAGS = new Set(["dd", "dt"]);
const RT_RP_TAGS = new Set(["rt", "rp"]);
const OPEN_IMPLIES_CLOSE = new Map<string, Set<string>>([
  ["tr", new Set(["tr", "th", "td"])],
  ["th", new Set(["th"])],
  ["td", new Set(["thead", "th", "td"])],
  ["body", new Set(["head", "link", "script"])],
  ["li", new Set(["li"])],
  ...["p", "h1", "h2", "h3", "h4", "h5", "h6"].map((t) => [t, P_TAG] as const),
  ...["select", "input", "output", "button", "datalist", "textarea"].map((t) => [t, FORM_TAGS] as const),
  ["option", new Set(["option"])],
  ["optgroup", new Set(["optgroup", "option"])],
  ["dd", DD_DT_TAGS],
  ["dt", DD_DT_TAGS],
  ...[
    "address", "article", "aside", "blockquote", "details", "div", "dl", "fieldset", "figcaption", "figure", "footer",
    "form", "header", "hr", "main", "nav", "ol", "pre", "section", "table", "ul",
  ].map((t) => [t, P_TAG] as const),
  ["rt", RT_RP_TAGS],
  ["rp", RT_RP_TAGS],
  ["tbody", TABLE_SECTION_TAGS],
  ["tfoot", TABLE_SECTION_TAGS],
]);
const VOID_ELEMENTS = new Set([
  "area", "base", "basefont", "br", "col", "command", "embed", "frame", "hr", "img", "input", "isindex", "keygen", "link",
  "meta", "param", "source", "track", "wbr",
]);
const FOREIGN_CONTEXT = new Set(["math", "svg"]);
const HTML_INTEGRATION = new Set(["mi", "mo", "mn", "ms", "mtext", "annotation-xml", "foreignobject", "desc", "title"]);

/**
 * Tokenizes `html` (entities decoded, tag and attribute names lower-cased) and reports
 * elements opening and closing with htmlparser2's Parser rules: implied closes, void
 * elements, `</p>` and `</br>` without an opening tag, self-closing tags only inside
 * SVG and MathML, and everything still open closed at the end.
 */
export function readHtml(html: string, events: TreeEvents): void {
  const reader = new TreeReader(html, events);
  const tokenizer = new Tokenizer({ decodeEntities: true }, reader);
  tokenizer.write(html);
  tokenizer.end();
}

/** A class rather than closures so that V8's optimised code is kept from one document to the next. */
class TreeReader implements TokenizerCallbacks {
  /** Open elements, innermost last. */
  private readonly stack: string[] = [];
  /** Whether self-closing tags count (SVG/MathML), innermost last. */
  private readonly foreign: boolean[] = [false];
  private tagName = "";
  private attribs: Attribs | null = null;
  private wanted: keyof Attribs | undefined = undefined;
  private collecting: keyof Attribs | null = null;
  private value = "";

  constructor(
    private readonly html: string,
    private readonly events: TreeEvents,
  ) {}

  ontext(start: number, end: number): void {
    this.events.text(this.html, start, end);
  }

  ontextentity(codepoint: number): void {
    const decoded = String.fromCodePoint(codepoint);
    this.events.text(decoded, 0, decoded.length);
  }

  onopentagname(start: number, end: number): void {
    this.openTagName(this.html.slice(start, end).toLowerCase());
  }

  onopentagend(): void {
    this.endOpenTag();
  }

  onselfclosingtag(): void {
    if (this.foreign[this.foreign.length - 1]) this.closeCurrentTag();
    else this.endOpenTag();
  }

  onclosetag(start: number, end: number): void {
    const name = this.html.slice(start, end).toLowerCase();
    const stack = this.stack;
    if (FOREIGN_CONTEXT.has(name) || HTML_INTEGRATION.has(name)) this.foreign.pop();
    if (!VOID_ELEMENTS.has(name)) {
      const at = stack.lastIndexOf(name);
      if (at !== -1) {
        while (stack.length > at) this.events.closeTag(stack.pop()!);
      } else if (name === "p") {
        this.openTagName("p");
        this.closeCurrentTag();
      }
    } else if (name === "br") {
      this.events.openTag("br", {});
      this.events.closeTag("br");
    }
  }

  onattribname(start: number, end: number): void {
    this.collecting = null;
    const wanted = this.wanted;
    if (wanted === undefined || this.attribs === null || this.attribs[wanted] !== undefined) return;
    if (this.html.slice(start, end).toLowerCase() === wanted) {
      this.collecting = wanted;
      this.value = "";
    }
  }

  onattribdata(start: number, end: number): void {
    if (this.collecting !== null) this.value += this.html.slice(start, end);
  }

  onattribentity(codepoint: number): void {
    if (this.collecting !== null) this.value += String.fromCodePoint(codepoint);
  }

  onattribend(): void {
    if (this.collecting !== null && this.attribs !== null) this.attribs[this.collecting] = this.value;
    this.collecting = null;
  }

  onend(): void {
    for (let i = this.stack.length - 1; i >= 0; i--) this.events.closeTag(this.stack[i]!);
  }

  oncdata(): void {}
  oncomment(): void {}
  ondeclaration(): void {}
  onprocessinginstruction(): void {}

  private openTagName(name: string): void {
    const stack = this.stack;
    const implied = OPEN_IMPLIES_CLOSE.get(name);
    if (implied) while (stack.length > 0 && implied.has(stack[stack.length - 1]!)) this.events.closeTag(stack.pop()!);
    if (!VOID_ELEMENTS.has(name)) {
      stack.push(name);
      if (FOREIGN_CONTEXT.has(name)) this.foreign.push(true);
      else if (HTML_INTEGRATION.has(name)) this.foreign.push(false);
    }
    this.tagName = name;
    this.wanted = WANTED_ATTRIBUTE.get(name);
    this.attribs = this.wanted === undefined ? NO_ATTRIBS : {};
  }

  private endOpenTag(): void {
    if (this.attribs) {
      this.events.openTag(this.tagName, this.attribs);
      this.attribs = null;
    }
    if (VOID_ELEMENTS.has(this.tagName)) this.events.closeTag(this.tagName);
    this.tagName = "";
  }

  private closeCurrentTag(): void {
    const name = this.tagName;
    this.endOpenTag();
    if (this.stack[this.stack.length - 1] === name) {
      this.stack.pop();
      this.events.closeTag(name);
    }
  }
}

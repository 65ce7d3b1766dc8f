/** DOM for one timeline item: a message bubble, a tool bubble or a notice. Each render function updates its element in place. */
import { h, replaceChildren } from "./dom.js";
import { bytes, duration, pretty } from "./format.js";
import { renderMarkdown } from "./markdown.js";
import type { Item, MessageItem, NoticeItem, ToolItem } from "./timeline.js";

/** Characters of tool output put in the page at once; the rest waits behind "Show all" so 5 MB cannot freeze it. */
export const OUTPUT_VIEW_LIMIT = 20_000;

export function createItemElement(item: Item): HTMLElement {
  if (item.kind === "message") return h("article", { testid: "message", class: `msg ${item.role}`, "data-role": item.role });
  if (item.kind === "tool") return h("div", { testid: "tool-call", class: "tool", "data-tool-name": item.name, "data-state": item.state });
  return h("div", { class: `notice ${item.tone}`, role: item.tone === "error" ? "alert" : "status" });
}

export function renderItem(el: HTMLElement, item: Item): void {
  if (item.kind === "message") renderMessage(el, item);
  else if (item.kind === "tool") renderTool(el, item);
  else renderNotice(el, item);
}

function renderMessage(el: HTMLElement, item: MessageItem): void {
  el.classList.toggle("streaming", item.streaming);
  el.classList.toggle("compacted", item.compacted);
  el.hidden = !item.text && !item.thinking && item.images.length === 0 && !item.streaming;
  const parts: Node[] = [];
  if (item.source) parts.push(h("div", { class: "msg-source" }, `from ${item.source}`));
  if (item.thinking) {
    const previous = el.querySelector<HTMLDetailsElement>("details.thinking");
    const open = previous ? previous.open : item.streaming && !item.text;
    parts.push(
      h("details", { testid: "thinking", class: "thinking", open }, h("summary", null, item.streaming && !item.text ? "Thinking…" : "Thinking"), h("div", { class: "thinking-body" }, item.thinking)),
    );
  }
  const body = h("div", { class: "md" });
  if (item.role === "assistant") body.appendChild(renderMarkdown(item.text));
  else body.textContent = item.text;
  parts.push(body);
  for (const src of item.images) parts.push(h("img", { class: "attachment", src, alt: "attached image" }));
  replaceChildren(el, parts);
}

function renderTool(el: HTMLElement, item: ToolItem): void {
  el.dataset.state = item.state;
  el.dataset.toolName = item.name;
  let details = el.querySelector<HTMLDetailsElement>(":scope > details");
  if (!details) {
    details = h("details", { open: !item.fromHistory }, h("summary"), h("div", { class: "tool-body" }));
    el.appendChild(details);
  }
  const status = item.state === "running" ? (item.elapsedMs ? `running ${duration(item.elapsedMs)}` : "running") : item.state === "done" ? "done" : "failed";
  replaceChildren(
    details.querySelector("summary")!,
    h("span", { class: `tool-icon ${item.state}`, "aria-hidden": "true" }),
    h("span", { class: "tool-name" }, item.name),
    h("span", { class: "tool-arg" }, summarizeInput(item.input)),
    h("span", { class: "tool-status" }, status, item.durationMs !== undefined ? ` · ${duration(item.durationMs)}` : ""),
  );
  const body = details.querySelector<HTMLElement>(".tool-body")!;
  let output = body.querySelector<HTMLPreElement>("[data-testid=tool-output]");
  if (!output) {
    replaceChildren(body, h("div", { class: "tool-label" }, "Input"), h("pre", { class: "tool-input" }), h("div", { class: "tool-label" }, "Output"), (output = h("pre", { testid: "tool-output", class: "tool-output" })), h("div", { class: "tool-more" }));
  }
  body.querySelector(".tool-input")!.textContent = item.input === undefined ? "…" : pretty(item.input);
  renderOutput(output, body.querySelector<HTMLElement>(".tool-more")!, item);
  for (const old of body.querySelectorAll("img.attachment")) old.remove();
  for (const src of item.images) body.appendChild(h("img", { class: "attachment", src, alt: `image from ${item.name}` }));
}

/** While running the newest output matters (tail); once done the beginning (head), with a way to see everything. */
function renderOutput(pre: HTMLPreElement, more: HTMLElement, item: ToolItem): void {
  const text = item.output;
  const expanded = pre.dataset.expanded === "true";
  if (expanded || text.length <= OUTPUT_VIEW_LIMIT) {
    pre.textContent = text;
    replaceChildren(more);
    return;
  }
  const hidden = text.length - OUTPUT_VIEW_LIMIT;
  pre.textContent = item.state === "running" ? `… ${hidden.toLocaleString()} earlier characters hidden …\n${text.slice(-OUTPUT_VIEW_LIMIT)}` : text.slice(0, OUTPUT_VIEW_LIMIT);
  replaceChildren(
    more,
    h("span", null, `Showing ${OUTPUT_VIEW_LIMIT.toLocaleString()} of ${text.length.toLocaleString()} characters (${bytes(new Blob([text]).size)}). `),
    h(
      "button",
      {
        type: "button",
        class: "link",
        onclick: () => {
          pre.dataset.expanded = "true";
          renderOutput(pre, more, item);
        },
      },
      "Show all",
    ),
    " ",
    h(
      "button",
      {
        type: "button",
        class: "link",
        onclick: () => {
          const url = URL.createObjectURL(new Blob([text], { type: "text/plain;charset=utf-8" }));
          window.open(url, "_blank", "noopener");
          setTimeout(() => URL.revokeObjectURL(url), 60_000);
        },
      },
      "Open as text",
    ),
  );
}

function renderNotice(el: HTMLElement, item: NoticeItem): void {
  if (item.detail) replaceChildren(el, h("details", null, h("summary", null, item.text), h("div", { class: "md" }, renderMarkdown(item.detail))));
  else el.textContent = item.text;
}

/** One line about the call: the command, path or pattern it works on. */
function summarizeInput(input: unknown): string {
  if (input === undefined || input === null) return "";
  if (typeof input !== "object") return String(input).slice(0, 120);
  const record = input as Record<string, unknown>;
  for (const key of ["command", "file", "path", "pattern", "query", "url", "question", "message", "content"]) {
    if (typeof record[key] === "string") return (record[key] as string).split("\n")[0]!.slice(0, 120);
  }
  const json = JSON.stringify(input);
  return json === "{}" ? "" : json.slice(0, 120);
}

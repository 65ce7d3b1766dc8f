import { TextDecoder } from "node:util";
import { ToolError } from "../../../errors.js";
import type { FetchedResponse } from "./safe-fetch.js";
import { htmlToText } from "./html-to-text.js";

/** Turning a fetched body into text: charset decoding, HTML conversion, binary refusal. */

export function mimeType(contentType: string): string {
  return contentType.split(";")[0]!.trim().toLowerCase();
}

function charsetOf(contentType: string, body: Buffer, html: boolean): string {
  const fromHeader = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType)?.[1];
  if (fromHeader) return fromHeader;
  if (html) {
    const head = body.subarray(0, 4096).toString("latin1");
    const meta = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1];
    if (meta) return meta;
  }
  return "utf-8";
}

export function decodeText(body: Buffer, contentType: string, html = false): string {
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charsetOf(contentType, body, html));
  } catch {
    decoder = new TextDecoder("utf-8");
  }
  return decoder.decode(body);
}

const TEXTUAL = /^(?:text\/.*|application\/(?:json|xml|javascript|ecmascript|x-javascript|x-www-form-urlencoded|yaml|x-yaml|toml|x-ndjson|ld\+json|graphql|sql|csv|rtf|x-sh)|.*\+(?:json|xml))$/;

function looksLikeHtml(body: Buffer): boolean {
  const head = body.subarray(0, 1024).toString("latin1").trimStart().toLowerCase();
  return head.startsWith("<!doctype html") || head.startsWith("<html") || head.startsWith("<head") || head.startsWith("<body");
}

function looksBinary(body: Buffer): boolean {
  return body.subarray(0, 8192).includes(0);
}

export function isHtmlResponse(response: FetchedResponse): boolean {
  const mime = mimeType(response.contentType);
  if (mime === "text/html" || mime === "application/xhtml+xml") return true;
  return (mime === "" || mime === "text/plain" || mime === "application/octet-stream") && looksLikeHtml(response.body);
}

/**
 * Readable text of a response: HTML converted to light markdown (with its title on
 * top), other text passed through; binary bodies are refused with a hint.
 */
export function responseToText(response: FetchedResponse): string {
  const mime = mimeType(response.contentType);
  if (isHtmlResponse(response)) {
    const { title, text } = htmlToText(decodeText(response.body, response.contentType, true), response.finalUrl);
    return title ? `Title: ${title}\n\n${text}` : text;
  }
  if (TEXTUAL.test(mime) || (mime === "" && !looksBinary(response.body))) {
    return decodeText(response.body, response.contentType).replace(/^\uFEFF/, "");
  }
  throw new ToolError(
    "FETCH_ERROR",
    `${response.finalUrl} returned binary content (${mime || "no content type"}, ${response.body.length} bytes) that cannot be shown as text; use mode "base64"`,
  );
}

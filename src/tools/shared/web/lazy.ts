/**
 * The web tools' heavy half (undici, htmlparser2), imported on a tool's first
 * call rather than at start-up, so `veil run` and `veil serve` start faster.
 */
export { fetchOptionsFromContext, parseFetchUrl, safeFetch } from "./safe-fetch.js";
export { decodeText, mimeType, responseToText } from "./body-text.js";
export { parseDdgResults } from "./ddg.js";

/** A W3C traceparent header (version-traceid-parentid-flags), else nothing: a malformed one is ignored, as the spec says. */
const TRACEPARENT = /^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The send option carrying a request's traceparent, when it has a valid one. */
export function traceparentOf(header: string | undefined): { traceparent?: string } {
  const value = header?.trim().toLowerCase();
  return value && TRACEPARENT.test(value) ? { traceparent: value } : {};
}

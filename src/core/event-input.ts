/**
 * A tool's input as tool.start and tool.end carry it. Every string in it longer than
 * EVENT_INPUT_STRING_CHARS is cut, with a note of its length: a write_file of 32 MB would
 * otherwise be serialised, stored and sent twice more in events. The whole input stays in
 * the assistant message (GET /sessions/:id/messages), which is what the model sees.
 */
export const EVENT_INPUT_STRING_CHARS = 30_000;

export function eventInput(input: unknown, max = EVENT_INPUT_STRING_CHARS): unknown {
  if (!hasLongString(input, max)) return input;
  return cut(input, max);
}

function hasLongString(value: unknown, max: number): boolean {
  if (typeof value === "string") return value.length > max;
  if (Array.isArray(value)) return value.some((item) => hasLongString(item, max));
  if (value && typeof value === "object") return Object.values(value).some((item) => hasLongString(item, max));
  return false;
}

function cut(value: unknown, max: number): unknown {
  if (typeof value === "string") return value.length > max ? `${value.slice(0, max)}… [cut in this event: ${value.length} chars]` : value;
  if (Array.isArray(value)) return value.map((item) => cut(item, max));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, cut(item, max)]));
  return value;
}

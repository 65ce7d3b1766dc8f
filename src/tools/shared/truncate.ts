/** Every tool cuts output the same way. */

export const MAX_OUTPUT_CHARS = 30_000;

export interface Truncated {
  text: string;
  truncated: boolean;
  totalChars: number;
}

/** Keeps the first `max` chars and appends a footer naming what was dropped. */
export function truncateOutput(text: string, max = MAX_OUTPUT_CHARS): Truncated {
  if (text.length <= max) return { text, truncated: false, totalChars: text.length };
  return { text: `${text.slice(0, max)}${truncationFooter(max, text.length)}`, truncated: true, totalChars: text.length };
}

/**
 * The footer alone, for callers that kept only the head of a stream and counted the rest
 * (bash output): `head.slice(0, max) + truncationFooter(max, totalChars)`.
 */
export function truncationFooter(max: number, totalChars: number): string {
  return `\n\n[Output truncated: showing first ${max} of ${totalChars} chars (${totalChars - max} more). Narrow the command or redirect to a file and read it with read_file.]`;
}

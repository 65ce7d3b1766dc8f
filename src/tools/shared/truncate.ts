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
  const dropped = text.length - max;
  return {
    text: `${text.slice(0, max)}\n\n[Output truncated: showing first ${max} of ${text.length} chars (${dropped} more). Narrow the command or redirect to a file and read it with read_file.]`,
    truncated: true,
    totalChars: text.length,
  };
}

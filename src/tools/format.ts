import { isVeilError, errorMessage } from "../errors.js";

/** The only place that knows the exact strings tools answer with (their shapes are part of the tools' interface). */

export function formatToolError(code: string, message: string): string {
  return `Error: ${code} — ${message}`;
}

export function formatThrown(error: unknown): { text: string; code: string } {
  if (isVeilError(error)) return { text: formatToolError(error.code, error.message), code: error.code };
  return { text: formatToolError("TOOL_ERROR", errorMessage(error)), code: "TOOL_ERROR" };
}

export function systemReminder(text: string): string {
  return `<system-reminder>${text}</system-reminder>`;
}

/** `<tag>value</tag>` lines, the XML envelopes tools answer with. Values are not escaped: the model reads them as written. */
export function xmlEnvelope(fields: [tag: string, value: string | number | boolean | null | undefined][]): string {
  return fields
    .filter(([, value]) => value !== undefined && value !== null)
    .map(([tag, value]) => {
      const text = String(value);
      return text.includes("\n") ? `<${tag}>\n${text}\n</${tag}>` : `<${tag}>${text}</${tag}>`;
    })
    .join("\n");
}

export function preview(text: string, max = 200): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

import type { Logger } from "../base/log.js";
import { VeilError } from "../errors.js";
import type { SessionRow } from "../store/store.js";
import type { ChatContent } from "./chat-content.js";
import type { SessionWriter } from "./session-writer.js";

/** Longest title a caller may give (after its whitespace is folded). */
export const TITLE_MAX_CHARS = 200;
/** Longest title made from a first message: a list line's worth. */
export const AUTO_TITLE_CHARS = 60;

/** Every run of whitespace (newlines too) as one space, trimmed: a title is one line. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/**
 * A title made from a session's first message: its text on one line, cut at a word boundary
 * to AUTO_TITLE_CHARS with "…"; null when the message has no text (an image alone).
 *
 * @example titleFromMessage("Fix the failing test\n\nin src/foo.ts") // "Fix the failing test in src/foo.ts"
 */
export function titleFromMessage(message: ChatContent): string | null {
  const text = oneLine(typeof message === "string" ? message : message.map((part) => (part.type === "text" ? part.text : "")).join(" "));
  if (!text) return null;
  const chars = [...text];
  if (chars.length <= AUTO_TITLE_CHARS) return text;
  const cut = chars.slice(0, AUTO_TITLE_CHARS - 1).join("");
  const space = cut.lastIndexOf(" ");
  return `${(space >= AUTO_TITLE_CHARS / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** A title a caller gave: folded to one line; empty or longer than TITLE_MAX_CHARS is a VALIDATION_ERROR. null clears. */
export function chosenTitle(title: string | null): string | null {
  if (title === null) return null;
  const line = oneLine(title);
  if (!line) throw new VeilError("VALIDATION_ERROR", "title: give some text (or null to clear the title)");
  if ([...line].length > TITLE_MAX_CHARS) throw new VeilError("VALIDATION_ERROR", `title: at most ${TITLE_MAX_CHARS} characters`);
  return line;
}

/**
 * Titles a session from its first message, unless it has a title already. Naming is a nicety:
 * a failure is logged, never the message's.
 */
export async function titleFromFirstMessage(writer: SessionWriter, log: Logger, message: ChatContent): Promise<void> {
  const title = titleFromMessage(message);
  if (!title) return;
  try {
    await writer.titleIfUnset(title);
  } catch (error) {
    log.warn("could not title the session from its first message", { sessionId: writer.sessionId, error: String(error) });
  }
}

/** PATCH /sessions/:id { title }: the caller's title (null clears it), checked and folded to one line. */
export function renameSession(writer: SessionWriter, title: string | null): Promise<SessionRow> {
  return writer.setTitle(chosenTitle(title));
}

/**
 * History of a session: from the durable event log (
 * `GET /sessions/:id/events?after=N&limit=M&follow=false`, a JSON array) when the
 * server has it, else from the stored messages. A fork's history is rows copied from its
 * source, with no events: the caller asks for "messages" for it. A server without the log answers that
 * URL with the live SSE stream instead; the probe sees the content type and lets go.
 */
import { errorOf, type Api } from "./api.js";
import type { ServerEvent } from "./stream.js";
import type { MessageRow, Timeline } from "./timeline.js";

export const HISTORY_PAGE = 2000;

export type HistoryMode = "events" | "messages";

/** Loads everything after `timeline.lastSeq` (events) or everything (messages) into the timeline. */
export async function loadHistory(api: Api, sessionId: string, timeline: Timeline, preferred?: HistoryMode): Promise<HistoryMode> {
  if (preferred !== "messages") {
    const first = await eventPage(api, sessionId, timeline.lastSeq);
    if (first) {
      let page = first;
      for (;;) {
        for (const event of page) timeline.apply(event, true);
        if (page.length < HISTORY_PAGE) return "events";
        const last = page[page.length - 1]!.seq;
        if (typeof last !== "number") return "events";
        page = (await eventPage(api, sessionId, last)) ?? [];
      }
    }
  }
  let after = 0;
  for (;;) {
    const response = await api.fetch(`/sessions/${encodeURIComponent(sessionId)}/messages?after=${after}&limit=${HISTORY_PAGE}`);
    if (!response.ok) throw await errorOf(response);
    const rows = (await response.json()) as MessageRow[];
    timeline.loadMessages(rows);
    if (rows.length < HISTORY_PAGE) return "messages";
    after = rows[rows.length - 1]!.seq;
  }
}

/** One page of the event log, or null when this server has no event log. */
async function eventPage(api: Api, sessionId: string, after: number): Promise<ServerEvent[] | null> {
  const controller = new AbortController();
  const response = await api.fetch(`/sessions/${encodeURIComponent(sessionId)}/events?after=${after}&limit=${HISTORY_PAGE}&follow=false`, { signal: controller.signal, headers: { accept: "application/json" } });
  if (!(response.headers.get("content-type") ?? "").includes("application/json")) {
    controller.abort();
    return null;
  }
  if (!response.ok) throw await errorOf(response);
  const body = (await response.json()) as unknown;
  return Array.isArray(body) ? (body as ServerEvent[]) : null;
}

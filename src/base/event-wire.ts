import type { VeilEvent, VeilEventBody } from "./events.js";

/**
 * The wire JSON of an event (flat, `type` and routing fields first) is made
 * once per event from its payload text, which is also what the event log stores. Every
 * SSE client and every replay then reuses the same string: no per-client JSON work.
 */
const wireCache = new WeakMap<VeilEvent, string>();

/** The body without its `type`, as JSON: what the event log stores in `data`. */
export function payloadJson(body: VeilEventBody): string {
  const { type: _type, ...payload } = body;
  return JSON.stringify(payload);
}

export function wireJson(fields: { type: string; sessionId: string; seq?: number; gseq?: number; ts: number }, payload: string): string {
  const head =
    `{"type":${JSON.stringify(fields.type)},"sessionId":${JSON.stringify(fields.sessionId)}` +
    (fields.seq !== undefined ? `,"seq":${fields.seq}` : "") +
    (fields.gseq !== undefined ? `,"gseq":${fields.gseq}` : "") +
    `,"ts":${fields.ts}`;
  return payload.length > 2 ? `${head},${payload.slice(1)}` : `${head}}`;
}

/** Attaches the wire text computed when the event was published. */
export function rememberWire(event: VeilEvent, wire: string): void {
  wireCache.set(event, wire);
}

export function eventWire(event: VeilEvent): string {
  let wire = wireCache.get(event);
  if (wire === undefined) {
    const { type, sessionId, seq, gseq, ts, ...rest } = event;
    wire = wireJson({ type, sessionId, seq, gseq, ts }, JSON.stringify(rest));
    wireCache.set(event, wire);
  }
  return wire;
}

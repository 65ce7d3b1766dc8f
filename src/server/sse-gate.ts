import type { VeilEvent } from "../base/events.js";

/** Whether a stream may carry a session's events: at once when known, else after a look-up. */
export type SessionAdmit = (sessionId: string) => boolean | Promise<boolean>;

/**
 * Delivers the events `admit` lets through, in their order. An answer known at once is
 * applied at once; one that needs a look-up (a session new to this node) holds the events
 * behind it until it is known, so a later event never overtakes an earlier one.
 */
export function orderedGate(admit: SessionAdmit, deliver: (event: VeilEvent) => void): (event: VeilEvent) => void {
  const queue: VeilEvent[] = [];
  let draining = false;
  const drain = async () => {
    draining = true;
    while (queue.length > 0) {
      const event = queue[0]!;
      if (await admit(event.sessionId)) deliver(event);
      queue.shift();
    }
    draining = false;
  };
  return (event) => {
    if (!draining) {
      const verdict = admit(event.sessionId);
      if (verdict === true) return deliver(event);
      if (verdict === false) return;
    }
    queue.push(event);
    if (!draining) void drain();
  };
}

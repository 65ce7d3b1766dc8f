import type { EventBus, EventFilter, VeilEvent } from "../base/events.js";
import { matchesFilter } from "../base/events.js";

interface Subscriber {
  filter: EventFilter;
  handler: (event: VeilEvent) => void;
}

/**
 * In-process fan-out. Numbering, storage and replay live in the EventLog; this only hands
 * each event to the subscribers that want it, in order, isolating a handler that throws.
 */
export class InProcessEventBus implements EventBus {
  private readonly subscribers = new Set<Subscriber>();

  constructor(private readonly options: { onHandlerError?: (error: unknown) => void } = {}) {}

  deliver(event: VeilEvent): void {
    for (const sub of this.subscribers) {
      if (!matchesFilter(sub.filter, event)) continue;
      try {
        sub.handler(event);
      } catch (error) {
        this.options.onHandlerError?.(error);
      }
    }
  }

  subscribe(filter: EventFilter, handler: (event: VeilEvent) => void): () => void {
    const sub = { filter, handler };
    this.subscribers.add(sub);
    return () => void this.subscribers.delete(sub);
  }
}

import type { EventSink, VeilEvent, VeilEventBody } from "../base/events.js";
import type { SessionWriter } from "./session-writer.js";

/**
 * The writer of each run live in this process, by session, so what others publish for a
 * session while it runs (a hook's hook.run, a remote method's method.pending and
 * method.done) goes through that run's writer: a run is the one writer of its session.
 * With no run live, an event goes to the event log as it is.
 */
export class RunWriters implements EventSink {
  private readonly live = new Map<string, SessionWriter>();

  constructor(private readonly events: EventSink) {}

  /** `writer` writes its session's events until the returned function is called (the run ended). */
  hold(writer: SessionWriter): () => void {
    this.live.set(writer.sessionId, writer);
    return () => {
      if (this.live.get(writer.sessionId) === writer) this.live.delete(writer.sessionId);
    };
  }

  /** The writer of the run live for the session now, if any. */
  writerOf(sessionId: string): SessionWriter | undefined {
    return this.live.get(sessionId);
  }

  publish(sessionId: string, body: VeilEventBody): Promise<VeilEvent> {
    const writer = this.live.get(sessionId);
    return writer ? writer.publish(body) : this.events.publish(sessionId, body);
  }
}

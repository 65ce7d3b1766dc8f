import { VeilError } from "../../errors.js";
import type { Clock } from "../../base/clock.js";

/** The one outcome of a sync call: its reply, or TIMEOUT / CANCELLED, whichever comes first. */
export interface SyncWait<T> {
  outcome: Promise<T | VeilError>;
  /** Settles the wait (later calls are ignored). */
  end(value: T | VeilError): void;
  isOver(): boolean;
}

/**
 * Waits for a reply of session `targetId` for at most `timeoutMs`, or until `signal` aborts.
 * `onEnd` runs once, when the wait settles. The target is never stopped here.
 */
export function waitForReply<T>(clock: Clock, targetId: string, timeoutMs: number, signal: AbortSignal, onEnd: () => void): SyncWait<T> {
  let over = false;
  let finish!: (outcome: T | VeilError) => void;
  const outcome = new Promise<T | VeilError>((resolve) => (finish = resolve));
  const end = (value: T | VeilError) => {
    if (over) return;
    over = true;
    onEnd();
    cancelTimer();
    signal.removeEventListener("abort", onAbort);
    finish(value);
  };
  const cancelTimer = clock.setTimer(timeoutMs, () =>
    end(
      new VeilError(
        "TIMEOUT",
        `no reply from session ${targetId} within ${Math.round(timeoutMs / 1000)} s. The sub-agent was NOT stopped and keeps working: check it with agent_control get-state / get-last-message, message it with async_inform: true, or stop it with agent_control stop.`,
      ),
    ),
  );
  const onAbort = () => end(new VeilError("CANCELLED", "the calling run was cancelled while waiting for the reply"));
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  return { outcome, end, isOver: () => over };
}

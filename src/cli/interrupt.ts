import type { CliIo } from "./terminal.js";

/** 128 + SIGINT: what shells report for a command ended by Ctrl-C. */
export const EXIT_INTERRUPTED = 130;

/** Ctrl-C during a command: the first asks it to stop cleanly, the second ends the process at once. */
export interface InterruptWatch {
  /** True once Ctrl-C was pressed. */
  readonly requested: boolean;
  /** `cancel` runs on the first Ctrl-C, or now if it came already. */
  onFirst(cancel: () => void): void;
  dispose(): void;
}

export function watchInterrupt(io: CliIo): InterruptWatch {
  let presses = 0;
  let cancel: (() => void) | undefined;
  const stopWatching =
    io.onInterrupt?.(() => {
      presses += 1;
      if (presses > 1) return io.exit?.(EXIT_INTERRUPTED);
      io.stderr("\ncancelling… (Ctrl-C again to quit at once)\n");
      cancel?.();
    }) ?? (() => {});
  return {
    get requested() {
      return presses > 0;
    },
    onFirst(callback) {
      cancel = callback;
      if (presses > 0) callback();
    },
    dispose: stopWatching,
  };
}

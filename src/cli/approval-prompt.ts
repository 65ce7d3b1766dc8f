import type { VeilEvent } from "../base/events.js";
import { APPROVAL_METHOD, type ApprovalRequest } from "../core/approvals.js";
import type { Runtime } from "../runtime.js";
import { preview } from "../tools/format.js";
import { paintFor, type CliIo } from "./terminal.js";

/** The reason a `veil run` without a terminal gives for every approval it cannot ask. */
export const NO_TERMINAL_REASON = "veil run asks for approval only on a terminal, and stdin is not one";

/**
 * `veil run`'s answer to the approvals of its turn (its sub-agents' too): on a terminal it
 * asks on stdin, one at a time (`y` or `yes` approves; anything else, or an empty line,
 * denies); elsewhere it denies at once, so a piped or scheduled run never hangs on a
 * question nobody sees. Returns the unsubscribe.
 */
export function answerApprovals(runtime: Pick<Runtime, "bus" | "remoteMethods">, io: CliIo): () => void {
  const paint = paintFor(io.env, io.stderrIsTTY);
  let queue: Promise<void> = Promise.resolve();
  const answer = async (event: VeilEvent & { type: "method.pending" }) => {
    const request = event.data as ApprovalRequest;
    const what = `${paint.bold(request.toolName)} ${paint.dim(preview(JSON.stringify(request.toolInput ?? {}), 200))}`;
    if (!io.stdinIsTTY || !io.ask) {
      io.stderr(`${paint.red("✗")} denied ${what}: ${NO_TERMINAL_REASON}\n`);
      runtime.remoteMethods.resolve(event.id, { approved: false, reason: NO_TERMINAL_REASON });
      return;
    }
    const line = await io.ask(`${paint.yellow("?")} allow ${what}? [y/N] `);
    const approved = /^\s*y(es)?\s*$/i.test(line);
    runtime.remoteMethods.resolve(event.id, approved ? { approved: true } : { approved: false, reason: "denied at the terminal" });
  };
  return runtime.bus.subscribe({ types: ["method.pending"] }, (event) => {
    const pending = event as VeilEvent & { type: "method.pending" };
    if (pending.method !== APPROVAL_METHOD) return;
    queue = queue.then(() => answer(pending)).catch(() => undefined);
  });
}

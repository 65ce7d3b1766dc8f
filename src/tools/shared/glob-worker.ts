/**
 * Entry of a glob worker thread (see glob-thread.ts). Runs globFiles here, so a pattern
 * that compiles to a catastrophically backtracking regex burns this thread, not the
 * server's event loop; the parent terminates the thread when a call is cancelled.
 */
import { parentPort } from "node:worker_threads";
import { isVeilError } from "../../errors.js";
import { globFiles } from "./glob-search.js";
import { isReadProtected } from "./path-guard.js";
import type { GlobJob, GlobReply, GlobRequest } from "./glob-thread.js";

const port = parentPort;
if (!port) throw new Error("glob-worker.js runs as a worker thread");
const running = new Map<number, AbortController>();

port.on("message", (message: GlobRequest) => {
  if (message.t === "cancel") {
    running.get(message.id)?.abort();
    return;
  }
  void run(message.id, message.job);
});

async function run(id: number, job: GlobJob): Promise<void> {
  const controller = new AbortController();
  running.set(id, controller);
  let reply: GlobReply;
  try {
    const { policy, ...query } = job;
    const result = await globFiles({ ...query, exclude: (absolute) => isReadProtected(policy, absolute), signal: controller.signal });
    reply = { t: "result", id, ok: true, result };
  } catch (error) {
    const code = isVeilError(error) ? error.code : "TOOL_ERROR";
    reply = { t: "result", id, ok: false, error: { code, message: error instanceof Error ? error.message : String(error) } };
  } finally {
    running.delete(id);
  }
  port!.postMessage(reply);
}

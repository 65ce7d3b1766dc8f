import { createRequire } from "node:module";
import type { Worker } from "node:worker_threads";

// node:worker_threads is compiled at its first require (about 1 ms): loaded by the first glob
// that needs a thread, not by every start-up.
const require = createRequire(import.meta.url);
import { ToolError, type ErrorCode } from "../../errors.js";
import type { Disposable } from "../types.js";
import { compiledEntry } from "./compiled-entry.js";
import type { GlobQuery, GlobResult } from "./glob-search.js";
import type { PathPolicy } from "./path-guard.js";

/** Runtime resource key of the glob threads. */
export const GLOB_THREADS_KEY = "files.globThreads";

/** A glob call as sent to a worker: plain data (the exclusion is the read policy). */
export interface GlobJob extends Omit<GlobQuery, "exclude" | "signal"> {
  /** Matches the policy protects from reads are left out. */
  policy: PathPolicy;
}

export type GlobRequest = { t: "glob"; id: number; job: GlobJob } | { t: "cancel"; id: number };
export type GlobReply = { t: "result"; id: number; ok: true; result: GlobResult } | { t: "result"; id: number; ok: false; error: { code: ErrorCode; message: string } };

/** Time a cancelled worker gets to stop by itself before it is terminated (it may be stuck in a regex). */
const CANCEL_GRACE_MS = 100;
/** Idle threads kept for the next calls (a thread start costs tens of ms). */
const MAX_IDLE = 2;

export interface GlobThreadsOptions {
  /** The compiled worker entry. default: glob-worker.js beside this module (dist/ from sources). */
  workerPath?: string;
}

/**
 * Glob matching off the event loop. picomatch compiles patterns to JS regexes, and some
 * (`(a+)+$`) backtrack exponentially on some names: run on the server's thread, one such
 * call freezes every session and /health. Each call gets a worker thread of its own
 * (reused when it finishes cleanly); cancelling a call terminates its thread if it does
 * not stop within CANCEL_GRACE_MS, and terminating works even mid-regex.
 */
export class GlobThreads implements Disposable {
  private readonly idle: Worker[] = [];
  private readonly all = new Set<Worker>();
  private readonly workerPath: string;
  private seq = 0;
  private closed = false;

  constructor(options: GlobThreadsOptions = {}) {
    this.workerPath = options.workerPath ?? compiledEntry(import.meta.url, "glob-worker.js");
  }

  /** Thread ids of the live workers (for tests). */
  threadIds(): number[] {
    return [...this.all].map((worker) => worker.threadId);
  }

  run(job: GlobJob, signal: AbortSignal): Promise<GlobResult> {
    if (this.closed) return Promise.reject(new ToolError("CANCELLED", "the runtime is shutting down"));
    if (signal.aborted) return Promise.reject(cancelled());
    const worker = this.idle.pop() ?? this.spawn();
    worker.ref();
    const id = ++this.seq;
    return new Promise<GlobResult>((resolve, reject) => {
      let grace: NodeJS.Timeout | undefined;
      const finish = (healthy: boolean, settle: () => void) => {
        clearTimeout(grace);
        worker.off("message", onMessage);
        worker.off("error", onError);
        worker.off("exit", onExit);
        signal.removeEventListener("abort", onAbort);
        this.release(worker, healthy);
        settle();
      };
      const onMessage = (reply: GlobReply) => {
        if (reply?.id !== id) return;
        if (signal.aborted) return finish(true, () => reject(cancelled()));
        if (reply.ok) return finish(true, () => resolve(reply.result));
        finish(true, () => reject(new ToolError(reply.error.code, reply.error.message)));
      };
      const onError = (error: Error) => finish(false, () => reject(new ToolError("TOOL_ERROR", `glob failed: ${error.message}`)));
      const onExit = (code: number) => finish(false, () => reject(new ToolError("TOOL_ERROR", `the glob worker exited (code ${code}) before answering`)));
      const onAbort = () => {
        worker.postMessage({ t: "cancel", id } satisfies GlobRequest);
        grace = setTimeout(() => finish(false, () => reject(cancelled())), CANCEL_GRACE_MS);
      };
      worker.on("message", onMessage);
      worker.on("error", onError);
      worker.on("exit", onExit);
      signal.addEventListener("abort", onAbort, { once: true });
      worker.postMessage({ t: "glob", id, job } satisfies GlobRequest);
    });
  }

  async dispose(): Promise<void> {
    this.closed = true;
    const workers = [...this.all];
    this.all.clear();
    this.idle.length = 0;
    await Promise.all(workers.map((worker) => worker.terminate()));
  }

  private spawn(): Worker {
    const { Worker: WorkerThread } = require("node:worker_threads") as typeof import("node:worker_threads");
    const worker = new WorkerThread(this.workerPath);
    this.all.add(worker);
    worker.once("exit", () => {
      this.all.delete(worker);
      const index = this.idle.indexOf(worker);
      if (index >= 0) this.idle.splice(index, 1);
    });
    // An idle thread's own errors (there should be none) must not crash the server.
    worker.on("error", () => undefined);
    return worker;
  }

  private release(worker: Worker, healthy: boolean): void {
    if (healthy && !this.closed && this.all.has(worker) && this.idle.length < MAX_IDLE) {
      worker.unref();
      this.idle.push(worker);
      return;
    }
    this.all.delete(worker);
    void worker.terminate();
  }
}

function cancelled(): ToolError {
  return new ToolError("CANCELLED", "glob was cancelled.");
}

import { afterEach, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { GlobThreads } from "../../../src/tools/shared/glob-thread.js";
import { compiledEntry } from "../../../src/tools/shared/compiled-entry.js";
import { tmpWorkspace, type TempWorkspace } from "../../helpers/workspace.js";
import { present } from "../../helpers/requirements.js";

const workerPath = compiledEntry(new URL("../../../src/tools/shared/glob-thread.ts", import.meta.url).href, "glob-worker.js");
let ws: TempWorkspace | undefined;
let threads: GlobThreads | undefined;
afterEach(async () => {
  await threads?.dispose();
  ws?.cleanup();
  ws = threads = undefined;
});

function job(root: string, pattern: string, secretFiles: string[] = []) {
  return { cwd: root, pattern, skipDirs: [".git"], rg: null, limit: 10, policy: { workspace: root, writeRoots: [], runtimeDirs: [], secretFiles } };
}

describe.skipIf(!present(`the build (${workerPath})`, existsSync(workerPath)))("GlobThreads", () => {
  it("answers on a worker thread, applies the read policy, and reuses the thread", async () => {
    ws = tmpWorkspace({ files: { "a.ts": "", "b.ts": "", "secret.ts": "" } });
    threads = new GlobThreads({ workerPath });
    const first = await threads.run(job(ws.root, "*.ts", [ws.path("secret.ts")]), new AbortController().signal);
    expect(first.total).toBe(2);
    expect(first.newest.map((m) => m.path).sort()).toEqual(["a.ts", "b.ts"]);
    const [thread] = threads.threadIds();
    await threads.run(job(ws.root, "b*"), new AbortController().signal);
    expect(threads.threadIds()).toEqual([thread]);
  });

  it("cancel terminates a thread stuck in a backtracking regex", async () => {
    ws = tmpWorkspace({ files: { ["a".repeat(40)]: "" } });
    threads = new GlobThreads({ workerPath });
    // A thread that already answered once is up: the stuck call starts on it at once, not after
    // a thread start (hundreds of ms on a loaded machine).
    await threads.run(job(ws.root, "a*"), new AbortController().signal);
    const [thread] = threads.threadIds();
    const controller = new AbortController();
    const running = threads.run(job(ws.root, "(a+)+$"), controller.signal);
    // No event says when the regex starts, so this is a wait (it cannot make the test fail, only
    // cancel earlier); the timer firing also shows that this thread is free.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(threads.threadIds()).toEqual([thread]);
    controller.abort();
    await expect(running).rejects.toMatchObject({ code: "CANCELLED" });
    // Terminated, not kept idle: a cleanly finished call leaves its thread for reuse.
    // worker.terminate() settles on its own schedule; on a loaded machine that is past poll's 1 s default.
    await expect.poll(() => threads!.threadIds(), { timeout: 15_000 }).toEqual([]);
  });
});

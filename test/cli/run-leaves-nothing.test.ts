import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { VEIL_MAIN, veilBuilt } from "../helpers/cli.js";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { present } from "../helpers/requirements.js";
import { sandboxUnavailable } from "../helpers/sandbox.js";
import { runUnderSubReaper } from "../helpers/sub-reaper.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const python = present("python3 (the sub-reaper)", spawnSync("python3", ["--version"]).status === 0);
const noSandbox = sandboxUnavailable();

let ws: TempWorkspace;
let llm: FakeLlm;

beforeEach(async () => {
  ws = tmpWorkspace();
  llm = await startFakeLlm();
});
afterEach(async () => {
  await llm.close();
  ws.cleanup();
});

// `veil run` with the sandbox on (the default where bubblewrap works) probes bwrap at start
// and runs bash in a bwrap sandbox. Each used to leave one process behind (the probe's and
// the shell's namespace init, orphaned when their bwrap exited or was killed first): in a
// container whose PID 1 reaps nothing, two zombies per run.
describe.skipIf(!veilBuilt || !python || noSandbox !== undefined)("veil run leaves no process behind", () => {
  it("exits with every process it started (sandbox probe, sandboxed shell) reaped by its own parent", async () => {
    llm.enqueue(reply().tool("bash", { command: "echo from-the-shell" }).stop());
    llm.enqueue(reply().text("done").stop());
    const env = { ...process.env, VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk-test", VEIL_MODEL: "fake-model", VEIL_HOME: join(ws.root, ".home") };
    const run = await runUnderSubReaper([process.execPath, VEIL_MAIN, "run", "--workspace", ws.root, "run a command"], { env, cwd: ws.root });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe("done\n");
    expect(JSON.stringify(llm.completionRequests[1]!.body.messages.at(-1))).toContain("from-the-shell");
    expect(run.stderr).not.toMatch(/sandbox.*(off|unavailable)/i);
    expect(run.orphans).toEqual([]);
  });
});

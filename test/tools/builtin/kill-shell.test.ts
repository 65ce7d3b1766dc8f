import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bash } from "../../../src/tools/builtin/bash.js";
import { bashOutput } from "../../../src/tools/builtin/bash-output.js";
import { killShell } from "../../../src/tools/builtin/kill-shell.js";
import type { ToolHarness } from "../../helpers/tool-context.js";
import { managerOf, pidsRunning, shellHarness } from "./shell-test-helpers.js";

let h: ToolHarness & { home: string };

beforeEach(async () => {
  h = await shellHarness();
});
afterEach(async () => {
  await h.close();
});

async function startBackground(command: string) {
  const result = await h.call(bash, { command, run_in_background: true });
  const id = (JSON.parse(result.output) as { shell_id: string }).shell_id;
  return { id, shell: managerOf(h).background(id)! };
}

describe("kill_shell", () => {
  it("terminates with SIGTERM and reports the final state", async () => {
    const { id, shell } = await startBackground("echo ready; sleep 4701");
    await shell.waitForBytes(6);
    const result = await h.call(killShell, { shell_id: id });
    expect(result.output).toContain("<status>killed</status>");
    expect(result.output).toContain("<signal>SIGTERM</signal>");
    expect(result.output).toContain("<total_bytes>6</total_bytes>");
    expect(result.output).toContain("<output>ready</output>");
    expect(pidsRunning("sleep", "4701")).toEqual([]);
    const after = await h.call(bashOutput, { shell_id: id });
    expect(after.output).toContain("<status>killed</status>");
  });

  it("escalates to SIGKILL when SIGTERM is ignored", async () => {
    const { id, shell } = await startBackground("trap '' TERM; echo ready; while :; do sleep 0.05; done");
    await shell.waitForBytes(6);
    const result = await h.call(killShell, { shell_id: id });
    expect(result.output).toContain("<status>killed</status>");
    expect(result.output).toContain("<signal>SIGKILL</signal>");
  });

  it("reports an already finished shell and kills what it left behind", async () => {
    const { id, shell } = await startBackground("nohup sleep 4702 >/dev/null 2>&1 & exit 3");
    await shell.settled;
    await waitUntil(() => pidsRunning("sleep", "4702").length === 1);
    const result = await h.call(killShell, { shell_id: id });
    expect(result.output).toContain("<status>exited</status>");
    expect(result.output).toContain("<exit_code>3</exit_code>");
    expect(result.output).toContain("already finished");
    expect(pidsRunning("sleep", "4702")).toEqual([]);
  });

  it("answers SHELL_NOT_FOUND for an unknown shell_id", async () => {
    const result = await h.call(killShell, { shell_id: "bg_ffffffffff" });
    expect(result.output).toMatch(/^Error: SHELL_NOT_FOUND — /);
  });
});

/** Process start is asynchronous to the shell returning; poll /proc briefly (bounded). */
async function waitUntil(check: () => boolean, tries = 200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("condition not met");
}

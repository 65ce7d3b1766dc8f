import { writeFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bash } from "../../../src/tools/builtin/bash.js";
import { bashOutput } from "../../../src/tools/builtin/bash-output.js";
import type { ToolHarness } from "../../helpers/tool-context.js";
import { managerOf, shellHarness } from "./shell-test-helpers.js";

let h: ToolHarness & { home: string };

beforeEach(async () => {
  h = await shellHarness();
});
afterEach(async () => {
  await h.close();
});

async function startBackground(command: string) {
  const result = await h.call(bash, { command, run_in_background: true });
  const started = JSON.parse(result.output) as Record<string, unknown>;
  return { started, shell: managerOf(h).background(started.shell_id as string)! };
}

describe("bash_output", () => {
  it("returns the documented JSON on start, then only new output per poll, then a stable final state", async () => {
    const command = "echo first; while [ ! -e go ]; do sleep 0.02; done; echo second; exit 4";
    const { started, shell } = await startBackground(command);
    expect(Object.keys(started)).toEqual(["shell_id", "pid", "status", "startedAt", "command", "note"]);
    expect(started.shell_id).toMatch(/^bg_[0-9a-f]{10}$/);
    expect(started.status).toBe("running");
    expect(started.command).toBe(command);
    expect(typeof started.pid).toBe("number");
    expect(new Date(started.startedAt as string).toISOString()).toBe(started.startedAt);

    await shell.waitForBytes("first\n".length);
    const first = await h.call(bashOutput, { shell_id: started.shell_id });
    expect(first.output).toContain("<status>running</status>");
    expect(first.output).not.toContain("<exit_code>");
    expect(first.output).toContain("<output>first</output>");

    const empty = await h.call(bashOutput, { shell_id: started.shell_id });
    expect(empty.output).toContain("<new_bytes>0</new_bytes>");
    expect(empty.output).toContain("<output>(no new output)</output>");

    writeFileSync(h.ws.path("go"), "");
    await shell.settled;
    const final = await h.call(bashOutput, { shell_id: started.shell_id });
    expect(final.output).toContain("<status>exited</status>");
    expect(final.output).toContain("<exit_code>4</exit_code>");
    expect(final.output).toContain("<total_bytes>13</total_bytes>");
    expect(final.output).toContain("<output>second</output>");

    const again = await h.call(bashOutput, { shell_id: started.shell_id });
    expect(again.output).toContain("<status>exited</status>");
    expect(again.output).toContain("<exit_code>4</exit_code>");
    expect(again.output).toContain("<output>(no new output)</output>");
  });

  it("caps what a background shell buffers between polls and keeps the newest output", async () => {
    const { shell } = await startBackground("head -c 1000000 /dev/zero | tr '\\0' y; echo; echo END");
    await shell.settled;
    await shell.waitForBytes(1_000_005);
    const poll = shell.poll();
    expect(poll.state.totalBytes).toBe(1_000_005);
    expect(poll.droppedBytes).toBeGreaterThan(700_000);
    expect(poll.output.endsWith("y\nEND\n")).toBe(true);
    expect(poll.output.length).toBeLessThanOrEqual(30_000);
    const rendered = (await h.call(bashOutput, { shell_id: poll.state.shell_id })).output;
    expect(rendered).toContain("<output>(no new output)</output>");
  });

  it("answers SHELL_NOT_FOUND for an unknown shell_id", async () => {
    const result = await h.call(bashOutput, { shell_id: "bg_0000000000" });
    expect(result.output).toMatch(/^Error: SHELL_NOT_FOUND — No background shell "bg_0000000000"/);
    expect(result.success).toBe(false);
  });
});

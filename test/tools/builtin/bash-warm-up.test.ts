import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bash } from "../../../src/tools/builtin/bash.js";
import { detectIsolation, IsolationProbe } from "../../../src/tools/shared/shell/isolation.js";
import { prewarmSessionShell } from "../../../src/tools/shared/shell/session-shells.js";
import type { ToolHarness } from "../../helpers/tool-context.js";
import { managerOf, shellHarness } from "./shell-test-helpers.js";

let h: ToolHarness & { home: string };

beforeEach(async () => {
  h = await shellHarness();
});
afterEach(async () => {
  await h.close();
});

const run = (command: string, extra: Record<string, unknown> = {}) => h.call(bash, { command, ...extra });
const bashrcRuns = () => readFileSync(`${h.home}/bashrc-count`, "utf8").split("\n").filter(Boolean).length;

/** Live processes started with this harness's HOME: its shells (and their children). */
function harnessShells(): number[] {
  const needle = `HOME=${h.home}\0`;
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z") continue;
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").startsWith("bash\0") && readFileSync(`/proc/${entry}/environ`, "utf8").includes(needle)) found.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

describe("bash warm-up (a shell started while the model thinks)", () => {
  it("is the shell the first call runs in: same directory, ~/.bashrc read once, one bash", async () => {
    await prewarmSessionShell(h.context());
    expect(bashrcRuns()).toBe(1);
    const [prewarmed] = harnessShells();
    expect(prewarmed).toBeDefined();
    const first = await run("pwd; echo $FROM_RC");
    expect(first.output).toBe(`${h.ws.path()}\nyes`);
    expect(bashrcRuns()).toBe(1);
    expect(harnessShells()).toEqual([prewarmed]);
  });

  it("gives way to a first call with another workingDir: that call's shell starts there, the prewarmed one ends", async () => {
    mkdirSync(h.ws.path("sub"));
    await prewarmSessionShell(h.context());
    const [prewarmed] = harnessShells();
    expect((await run("pwd", { workingDir: "sub" })).output).toBe(h.ws.path("sub"));
    const now = harnessShells();
    expect(now).toHaveLength(1);
    expect(now).not.toContain(prewarmed);
  });

  it("ends with the session when no call adopted it", async () => {
    await prewarmSessionShell(h.context());
    expect(harnessShells()).toHaveLength(1);
    await h.sessionResources.dispose();
    expect(harnessShells()).toEqual([]);
  });

  it("ends for good when the session closes while ~/.bashrc still holds it up (no --norc retry left running)", async () => {
    writeFileSync(`${h.home}/.bashrc`, "sleep 30\n");
    const warming = prewarmSessionShell(h.context());
    await expect.poll(() => harnessShells().length).toBe(1);
    await h.sessionResources.dispose();
    await warming;
    expect(harnessShells()).toEqual([]);
  });

  it("starts nothing once the session's shells are closed", async () => {
    await run("true");
    const manager = managerOf(h);
    await manager.dispose();
    await prewarmSessionShell(h.context());
    expect(harnessShells()).toEqual([]);
  });

  it("probes isolation without blocking, to the same answer as the blocking probe", async () => {
    const probe = new IsolationProbe();
    const warmed = await probe.warm();
    expect(warmed).toEqual(detectIsolation());
    expect(probe.get()).toBe(warmed);
  });
});

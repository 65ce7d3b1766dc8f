import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bash } from "../../../src/tools/builtin/bash.js";
import { detectIsolation, IsolationProbe } from "../../../src/tools/shared/shell/isolation.js";
import { prewarmSessionShell } from "../../../src/tools/shared/shell/session-shells.js";
import { managerOf, pidsRunning, shellHarness, shellHome, writeRc, type ShellHarness } from "./shell-test-helpers.js";

let h: ShellHarness;

beforeEach(async () => {
  h = await shellHarness();
});
afterEach(async () => {
  await h.close();
});

const run = (command: string, extra: Record<string, unknown> = {}) => h.call(bash, { command, ...extra });

describe("bash: persistent shell", () => {
  it("keeps cd, export, aliases and functions across calls", async () => {
    mkdirSync(h.ws.path("sub"));
    expect((await run("cd sub && pwd")).output).toBe(h.ws.path("sub"));
    expect((await run("pwd")).output).toBe(h.ws.path("sub"));
    expect((await run("export X=1 && echo $X")).output).toBe("1");
    expect((await run("echo $X")).output).toBe("1");
    await run("alias hello='echo hello-alias'");
    expect((await run("hello")).output).toBe("hello-alias");
    await run("greet() { echo \"hi $1\"; }");
    expect((await run("greet there")).output).toBe("hi there");
    await run("declare -a arr=(a b c)");
    expect((await run("echo ${#arr[@]}")).output).toBe("3");
  });

  it("starts in the workspace and sources ~/.bashrc exactly once", async () => {
    expect((await run("pwd")).output).toBe(h.ws.root);
    expect((await run("from_rc; echo $FROM_RC")).output).toBe("alias-from-bashrc\nyes");
    await run("true");
    expect(readFileSync(join(await shellHome(h), "bashrc-count"), "utf8")).toBe("bashrc\n");
  });

  it("honours workingDir on the first call only", async () => {
    mkdirSync(h.ws.path("a"));
    mkdirSync(h.ws.path("b"));
    expect((await run("pwd", { workingDir: "a" })).output).toBe(h.ws.path("a"));
    const second = await run("pwd", { workingDir: "b" });
    expect(second.output).toContain(h.ws.path("a"));
    expect(second.output).toContain("workingDir ignored");
  });

  it("rejects a workingDir that does not exist", async () => {
    const result = await run("pwd", { workingDir: "nope" });
    expect(result.output).toMatch(/^Error: FILE_NOT_FOUND — /);
  });

  it("gives commands stdin from /dev/null so they cannot swallow the next command", async () => {
    expect((await run("cat; echo after-cat")).output).toBe("after-cat");
    expect((await run('read x; echo "got:[$x] rc=$?"')).output).toBe("got:[] rc=1");
    expect((await run("echo next")).output).toBe("next");
  });

  it("sets variables that make interactive prompts fail fast", async () => {
    expect((await run("echo $GIT_TERMINAL_PROMPT $PAGER $GIT_PAGER $DEBIAN_FRONTEND")).output).toBe("0 cat cat noninteractive");
  });
});

describe("bash: output", () => {
  it("interleaves stdout and stderr in the order produced", async () => {
    expect((await run("echo a; echo b >&2; echo c; echo d >&2")).output).toBe("a\nb\nc\nd");
  });

  it("prefixes a non-zero exit with `exit code: N`", async () => {
    const failed = await run("echo out; (exit 7)");
    expect(failed.output).toBe("exit code: 7\nout");
    expect(failed.success).toBe(false);
    expect((await run("false")).output).toBe("exit code: 1");
    expect((await run("true")).output).toBe("(no output)");
  });

  it("keeps output that does not end in a newline", async () => {
    expect((await run("printf abc")).output).toBe("abc");
    expect((await run("printf 'x\\0y'")).output).toBe("x\0y");
  });

  it("caps output at 30000 chars with the truncation footer", async () => {
    const result = await run("head -c 40000 /dev/zero | tr '\\0' x");
    expect(result.output.startsWith("x".repeat(30000) + "\n\n[Output truncated: showing first 30000 of 40000 chars (10000 more).")).toBe(true);
    expect(result.details?.truncated).toBe(true);
  });

  it("survives 1 GB of output with bounded memory", async () => {
    await run("true");
    const before = process.memoryUsage().rss;
    const result = await run("yes | head -c 1000000000; echo done >&2");
    const growth = process.memoryUsage().rss - before;
    expect(growth).toBeLessThan(200 * 1024 * 1024);
    expect(result.output).toContain("showing first 30000 of 1000000005 chars");
    expect(result.details?.totalBytes).toBe(1000000005);
    expect((await run("echo still-alive")).output).toBe("still-alive");
  }, 120_000);

  it("streams live output as tool.chunk events, coalesced and stopped at the cap", async () => {
    await run("echo one; echo two >&2");
    const small = h.events.filter((e) => e.type === "tool.chunk").map((e) => (e as { chunk: string }).chunk).join("");
    expect(small).toBe("one\ntwo\n");
    const start = h.events.length;
    await run("yes | head -c 5000000");
    const chunks = h.events.slice(start).filter((e) => e.type === "tool.chunk").map((e) => (e as { chunk: string }).chunk);
    const text = chunks.join("");
    expect(chunks.length).toBeLessThan(20);
    expect(text.startsWith("y\ny\n")).toBe(true);
    expect(text).toContain("live output stopped at 30000 chars");
    expect(text.length).toBeLessThan(30200);
  });
});

describe("bash: timeouts, syntax and cancellation", () => {
  it("validates timeout against the documented maximum of 600 s", async () => {
    expect((await run("true", { timeout: 601 })).output).toMatch(/^Error: VALIDATION_ERROR/);
  });

  it("kills the command on timeout, restarts the shell and says state was lost", async () => {
    await run("export KEEP=1; cd /");
    const result = await run("echo before; sleep 4242", { timeout: 1 });
    expect(result.success).toBe(false);
    expect(result.output).toMatch(/^before\n\n\[Command timed out after 1s/);
    expect(result.output).toContain("lost its cd/export");
    expect(pidsRunning("sleep", "4242")).toEqual([]);
    expect((await run('echo "${KEEP:-unset} $PWD"')).output).toBe(`unset ${h.ws.root}`);
  });

  it("answers an unterminated heredoc with a syntax error and runs nothing", async () => {
    const result = await run("touch should-not-exist\ncat <<EOF\nabc");
    expect(result.success).toBe(false);
    expect(result.output).toContain("Syntax check failed, so nothing was run");
    expect(result.output).toContain("here-document");
    expect((await run("ls should-not-exist 2>/dev/null; echo next")).output).toBe("next");
  });

  it("answers an unterminated quote with a syntax error", async () => {
    const result = await run('echo "abc');
    expect(result.output).toContain("Syntax check failed");
    expect((await run("echo ok")).output).toBe("ok");
  });

  it("keeps working after several syntax errors in a row", async () => {
    for (const broken of ['echo "abc', "cat <<EOF\nx", "if true; then", "echo 'a", "for i in 1; do"]) {
      expect((await run(broken, { timeout: 5 })).output).toContain("Syntax check failed");
    }
    expect((await run("echo recovered")).output).toBe("recovered");
  });

  it("does not wedge on a trailing backslash", async () => {
    const result = await run("echo hi \\");
    expect(result.output).toContain("hi");
    expect((await run("echo ok")).output).toBe("ok");
  });

  it("reports a shell that exits and starts a fresh one on the next call", async () => {
    await run("export GONE=1");
    const result = await run("echo bye; exit 5");
    expect(result.output).toMatch(/^exit code: 5\nbye/);
    expect(result.output).toContain("The shell itself exited");
    expect((await run("echo ${GONE:-fresh}")).output).toBe("fresh");
  });

  it("kills the running command on cancel and answers CANCELLED", async () => {
    const controller = new AbortController();
    const unsubscribe = h.bus.subscribe({ types: ["tool.chunk"] }, (event) => {
      if ((event as { chunk: string }).chunk.includes("started")) controller.abort();
    });
    const result = await h.call(bash, { command: "echo started; sleep 4545" }, { signal: controller.signal });
    unsubscribe();
    expect(result.output).toMatch(/^Error: CANCELLED — /);
    expect(pidsRunning("sleep", "4545")).toEqual([]);
    expect((await run("echo works")).output).toBe("works");
  });
});

describe("bash: session close", () => {
  for (const isolation of ["auto", "process-group"] as const) {
    it(`kills daemons forked with setsid and nohup (${isolation})`, async () => {
      const own = await shellHarness(isolation);
      try {
        const result = await own.call(bash, {
          command: "setsid sleep 4601 >/dev/null 2>&1 < /dev/null & nohup sleep 4602 >/dev/null 2>&1 & echo started",
        });
        expect(result.output).toBe("started");
        const bg = await own.call(bash, { command: "setsid sleep 4603 >/dev/null 2>&1 & sleep 4604", run_in_background: true });
        expect(bg.success).toBe(true);
        const manager = managerOf(own);
        if (isolation === "process-group") expect(manager.isolationMode).toBe("process-group");
        const id = JSON.parse(bg.output).shell_id as string;
        expect(manager.background(id)!.running).toBe(true);
        for (const n of ["4601", "4602", "4603", "4604"]) await waitUntil(() => pidsRunning("sleep", n).length === 1);
        await own.sessionResources.dispose();
        for (const n of ["4601", "4602", "4603", "4604"]) expect(pidsRunning("sleep", n)).toEqual([]);
      } finally {
        await own.close();
      }
    });
  }
});

describe("bash: background inherits the foreground shell", () => {
  it("starts in the shell's cwd with its exported variables and functions", async () => {
    mkdirSync(h.ws.path("deep"));
    writeFileSync(h.ws.path("deep/marker"), "m");
    await run("cd deep; export INHERIT=42; shout() { echo SHOUT; }");
    const started = await run("pwd; echo $INHERIT; shout; ls", { run_in_background: true });
    const id = JSON.parse(started.output).shell_id as string;
    const shell = managerOf(h).background(id)!;
    await shell.settled;
    const poll = shell.poll();
    expect(poll.output).toBe(`${h.ws.path("deep")}\n42\nSHOUT\nmarker\n`);
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

const bashrcRuns = async () => readFileSync(`${await shellHome(h)}/bashrc-count`, "utf8").split("\n").filter(Boolean).length;

/** Live processes started with this harness's HOME (or its sandbox's): its shells (and their children). */
async function harnessShells(): Promise<number[]> {
  const needle = `HOME=${await shellHome(h)}\0`;
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
    expect(await bashrcRuns()).toBe(1);
    const [prewarmed] = await harnessShells();
    expect(prewarmed).toBeDefined();
    const first = await run("pwd; echo $FROM_RC");
    expect(first.output).toBe(`${h.ws.path()}\nyes`);
    expect(await bashrcRuns()).toBe(1);
    expect(await harnessShells()).toEqual([prewarmed]);
  });

  it("gives way to a first call with another workingDir: that call's shell starts there, the prewarmed one ends", async () => {
    mkdirSync(h.ws.path("sub"));
    await prewarmSessionShell(h.context());
    const [prewarmed] = await harnessShells();
    expect((await run("pwd", { workingDir: "sub" })).output).toBe(h.ws.path("sub"));
    const now = await harnessShells();
    expect(now).toHaveLength(1);
    expect(now).not.toContain(prewarmed);
  });

  it("ends with the session when no call adopted it", async () => {
    await prewarmSessionShell(h.context());
    expect(await harnessShells()).toHaveLength(1);
    await h.sessionResources.dispose();
    expect(await harnessShells()).toEqual([]);
  });

  it("ends for good when the session closes while ~/.bashrc still holds it up (no --norc retry left running)", async () => {
    writeRc(h, "sleep 30\n");
    const warming = prewarmSessionShell(h.context());
    await expect.poll(async () => (await harnessShells()).length).toBe(1);
    await h.sessionResources.dispose();
    await warming;
    expect(await harnessShells()).toEqual([]);
  });

  it("starts nothing once the session's shells are closed", async () => {
    await run("true");
    const manager = managerOf(h);
    await manager.dispose();
    await prewarmSessionShell(h.context());
    expect(await harnessShells()).toEqual([]);
  });

  it("probes isolation without blocking, to the same answer as the blocking probe", async () => {
    const probe = new IsolationProbe();
    const warmed = await probe.warm();
    expect(warmed).toEqual(detectIsolation());
    expect(probe.get()).toBe(warmed);
  });
});

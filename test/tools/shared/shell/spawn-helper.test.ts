/**
 * The spawn helper (what `veil serve` uses): shells are started by a small helper process that
 * hands their pipes back, so the server never forks. What a shell sees and what the server
 * reads of it must not differ from a direct spawn, and a helper that dies must not strand them.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { describe, expect, it, vi } from "vitest";
import { systemClock } from "../../../../src/base/clock.js";
import { isAlive, PROCESS_GROUP } from "../../../../src/tools/shared/shell/isolation.js";
import { PersistentShell } from "../../../../src/tools/shared/shell/persistent-shell.js";
import { spawnHelperPid, spawnShellProcess, useSpawnHelper, type ShellProcess } from "../../../../src/tools/shared/shell/spawn-helper.js";
import { present } from "../../../helpers/requirements.js";

useSpawnHelper();

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

const BUILT_HELPER = join(process.cwd(), "dist/src/tools/shared/shell/spawn-helper.js");

/** Pids of the live processes whose command line contains `marker`. */
function processesWith(marker: string): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/cmdline`, "utf8").includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

function readAll(stream: Readable): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    stream.on("data", (d: Buffer) => (text += d.toString()));
    stream.once("end", () => resolve(text));
  });
}

function exited(shell: ShellProcess): Promise<[number | null, string | null]> {
  return new Promise((resolve) => shell.once("exit", (code: number | null, signal: string | null) => resolve([code, signal])));
}

describe("spawn helper", () => {
  it("starts the process as the helper's child and hands over every byte it writes from its first instant, and its exit status", async () => {
    const shell = await spawnShellProcess({ file: "bash", args: ["-c", "echo early-err >&2; echo early-out; read line; echo got:$line; exit 7"], cwd: tmpdir() });
    const helperPid = spawnHelperPid();
    expect(helperPid).toBeDefined();
    expect(helperPid).not.toBe(process.pid);
    expect(parentOf(shell.pid!)).toBe(helperPid);
    const status = exited(shell);
    const [out, err] = [readAll(shell.stdout), readAll(shell.stderr)];
    shell.stdin.end("hello\n");
    expect(await out).toBe("early-out\ngot:hello\n");
    expect(await err).toBe("early-err\n");
    expect(await status).toEqual([7, null]);
  });

  it("reports a spawn that fails as a direct spawn does: no pid, then an error event", async () => {
    const shell = await spawnShellProcess({ file: "bash", args: ["-c", "true"], cwd: join(tmpdir(), "veil-no-such-dir-for-spawn") });
    const error = await new Promise<NodeJS.ErrnoException>((resolve) => shell.once("error", resolve));
    expect(shell.pid).toBeUndefined();
    expect(error.code).toBe("ENOENT");
  });

  it("runs a persistent shell through it", async () => {
    const shell = new PersistentShell({ cwd: tmpdir(), isolation: PROCESS_GROUP, tempDir: tmpdir(), clock: systemClock, loadBashrc: false });
    await shell.start();
    expect(parentOf(shell.pid!)).toBe(spawnHelperPid());
    const result = await shell.run("cd / && echo $((6 * 7))", { timeoutMs: 5_000 });
    expect(result).toMatchObject({ outcome: "completed", exitCode: 0, cwd: "/" });
    expect(result.output.head).toBe("42\n");
    await shell.dispose();
    expect(shell.alive).toBe(false);
  });

  it("a shell closed while the helper starts it is ended once it has started, not left running", async () => {
    const shell = new PersistentShell({ cwd: tmpdir(), isolation: PROCESS_GROUP, tempDir: tmpdir(), clock: systemClock, loadBashrc: false });
    const starting = shell.start();
    await shell.dispose();
    await expect(starting).rejects.toThrow("the shell was closed while it started");
    expect(shell.pid).toBeDefined();
    expect(isAlive(shell.pid!)).toBe(false);
  });

  it("when the helper dies, its shells are reported gone (and killed), and the next spawn gets a new helper", async () => {
    const shell = await spawnShellProcess({ file: "sleep", args: ["30"], cwd: tmpdir() });
    const first = spawnHelperPid()!;
    const status = exited(shell);
    process.kill(first, "SIGKILL");
    expect(await status).toEqual([null, "SIGKILL"]);
    while (isAlive(shell.pid!)) await new Promise((resolve) => setTimeout(resolve, 10));
    const next = await spawnShellProcess({ file: "bash", args: ["-c", "read line; echo $line"], cwd: tmpdir() });
    expect(spawnHelperPid()).not.toBe(first);
    expect(parentOf(next.pid!)).toBe(spawnHelperPid());
    next.stdin.end("again\n");
    expect(await readAll(next.stdout)).toBe("again\n");
  });

  it.skipIf(!present(`the build (${BUILT_HELPER})`, existsSync(BUILT_HELPER)))("a server killed while the helper hands it a shell's pipes takes the helper and its shells with it", async () => {
    // The "server": starts one shell, asks for a second and is SIGKILLed before it can take the
    // second's pipes (Node then never tells the helper its channel closed).
    const marker = `veil-helper-orphan-${process.pid}-${Date.now()}`;
    const script = `
      const m = await import(${JSON.stringify(BUILT_HELPER)});
      m.useSpawnHelper();
      const shell = { file: "bash", args: ["-c", "sleep 60; : ${marker}"], cwd: "/tmp" };
      await m.spawnShellProcess(shell);
      process.stdout.write(String(m.spawnHelperPid()));
      void m.spawnShellProcess(shell);
      process.kill(process.pid, "SIGKILL");`;
    const server = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    server.stdout.on("data", (d: Buffer) => (out += d.toString()));
    await new Promise((resolve) => server.once("exit", resolve));
    const helperPid = Number(out);
    expect(helperPid).toBeGreaterThan(0);
    await vi.waitFor(() => {
      expect(isAlive(helperPid)).toBe(false);
      expect(processesWith(marker)).toEqual([]);
    }, { timeout: 15_000, interval: 100 });
  });
});

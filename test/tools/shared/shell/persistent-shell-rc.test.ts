/**
 * A shell closed while its ~/.bashrc still runs: the rc's scripts get a SIGTERM first, so
 * their exit traps run (pyenv's rehash removes its lock file in one; a bare SIGKILL left it
 * behind and every later `bash -i` of the user waited a minute for it).
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../../../src/base/clock.js";
import { PersistentShell } from "../../../../src/tools/shared/shell/persistent-shell.js";
import { detectIsolation, PROCESS_GROUP, type Isolation } from "../../../../src/tools/shared/shell/isolation.js";

let home: string;
afterEach(() => rmSync(home, { recursive: true, force: true }));

/** A .bashrc that runs a script holding a lock file until it exits (pyenv-rehash's pattern). */
function homeWithLockingRc(): { home: string; lock: string; started: string } {
  home = mkdtempSync(join(tmpdir(), "veil-rc-home-"));
  const lock = join(home, "rehash.lock");
  const started = join(home, "rehash.started");
  writeFileSync(join(home, "rehash.sh"), `echo > "${lock}"\ntrap 'rm -f "${lock}"' EXIT\necho > "${started}"\nsleep 30\n`);
  writeFileSync(join(home, ".bashrc"), `bash "${join(home, "rehash.sh")}"\n`);
  return { home, lock, started };
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 10));
}

const modes: [string, Isolation][] = [["process-group", PROCESS_GROUP]];
const detected = detectIsolation();
if (detected.mode === "pid-namespace") modes.push(["pid-namespace", detected]);

describe.each(modes)("a shell closed during ~/.bashrc (%s)", (_name, isolation) => {
  it("lets the rc's scripts run their exit traps before the SIGKILL", async () => {
    const paths = homeWithLockingRc();
    const shell = new PersistentShell({ cwd: paths.home, isolation, tempDir: paths.home, clock: systemClock, env: { ...process.env, HOME: paths.home } });
    // Its start may still finish (the rc ends early once its script is gone) or fail: either is fine.
    const starting = shell.start().catch(() => undefined);
    await until(() => existsSync(paths.started));
    expect(existsSync(paths.lock)).toBe(true);
    await shell.dispose();
    await starting;
    expect(existsSync(paths.lock)).toBe(false);
  });
});

describe("a shell disposed before its start ran (a prewarmed shell of a session that ended)", () => {
  it("never spawns bash: start() refuses at once", async () => {
    home = mkdtempSync(join(tmpdir(), "veil-rc-home-"));
    const shell = new PersistentShell({ cwd: home, isolation: PROCESS_GROUP, tempDir: home, clock: systemClock, env: { ...process.env, HOME: home } });
    await shell.dispose();
    await expect(shell.start()).rejects.toThrow(/closed before it started/);
    expect(shell.pid).toBeUndefined();
  });
});

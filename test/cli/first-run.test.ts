import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { processes } from "../helpers/proc.js";
import { BUILD_OUTPUTS, builtStamp, sourceStamp } from "../../scripts/build-stamp.mjs";

const run = promisify(execFile);
const REPO = fileURLToPath(new URL("../..", import.meta.url));
const README = readFileSync(join(REPO, "README.md"), "utf8");
const isClone = existsSync(join(REPO, ".git")) && existsSync(join(REPO, "node_modules"));

/** The README's run command: the second half of `npm ci && npx veil serve` in "The two commands". */
function readmeRunCommand(): string[] {
  const block = /## The two commands\n\n```sh\n([\s\S]*?)\n```/.exec(README)?.[1] ?? "";
  const line = block.split("\n").find((l) => l.includes("veil serve")) ?? "";
  const command = /^npm ci && (.+?)\s+#/.exec(line)?.[1];
  if (!command) throw new Error(`README: no "npm ci && … veil serve" line in "The two commands":\n${block}`);
  return command.split(/\s+/);
}

/** Every file under `dir` with its size and modification time: what a rebuild would change. */
function snapshot(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else {
        const info = statSync(path);
        files.set(path.slice(dir.length), `${info.size}:${info.mtimeMs}`);
      }
    }
  };
  walk(dir);
  return files;
}

/**
 * The README's first command as a newcomer runs it: in a fresh `git clone` of this
 * repository, after `npm ci`. `npm ci` itself is replaced by what it leaves behind (a full
 * npm ci downloads and compiles for minutes): node_modules is this checkout's, linked in, and
 * dist/ is what `prepare` builds — this checkout's own build when its stamp says it was built
 * from exactly the clone's sources, else built in the clone by the clone's `prepare`. Then
 * `npx veil serve` runs as typed (plus `--port 0`, so it cannot collide with another server),
 * with a private HOME, npm cache and VEIL_HOME, and npm offline: npx installs the clone into
 * its cache, which runs `prepare` again; that second `prepare` must not rebuild.
 *
 * Covered: npx's own path to the bin (its cache install and the `prepare` it runs), the CLI
 * bundle's first start without a code cache, the printed next steps, the dashboard and the API
 * answering. Not covered: npm's download and native build of dependencies.
 */
describe.skipIf(!isClone)("the README's first command in a fresh clone", () => {
  let root: string;
  let clone: string;
  let home: string;
  let before: Map<string, string>;
  let served: { stdout: string; stderr: string; elapsedMs: number; health: unknown; page: string; sessions: number; secretFile: string; lingered: boolean };

  beforeAll(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "veil-first-run-")));
    clone = join(root, "veil");
    home = join(root, "home");
    mkdirSync(home);
    await run("git", ["clone", "--quiet", REPO, clone]);
    symlinkSync(join(REPO, "node_modules"), join(clone, "node_modules"));
    const built = builtStamp(REPO);
    if (built && built === sourceStamp(clone)) cpSync(join(REPO, "dist"), join(clone, "dist"), { recursive: true, preserveTimestamps: true });
    else await run(process.execPath, [join(clone, "scripts", "prepare.mjs")], { cwd: clone, maxBuffer: 64 * 1024 * 1024 });
    before = snapshot(join(clone, "dist"));
    served = await serveOnce(clone, home, [...readmeRunCommand(), "--port", "0"]);
    // A checkout with uncommitted changes has no build of its HEAD: the clone builds one (minutes on a loaded machine).
  }, 600_000);

  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("is `npx veil serve`, and serves at once: the prepare that npx runs leaves dist/ as it was", ({ annotate }) => {
    expect(readmeRunCommand()).toEqual(["npx", "veil", "serve"]);
    expect(served.stdout).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+\n/);
    // npx went its usual way: it installed the clone into its cache (a link), which runs prepare.
    const npx = join(home, "npm-cache", "_npx");
    const links = readdirSync(npx).map((dir) => join(npx, dir, "node_modules", "veilcli")).filter((path) => existsSync(path));
    expect(links.map((link) => resolve(join(link, ".."), readlinkSync(link)))).toEqual([clone]);
    expect(snapshot(join(clone, "dist"))).toEqual(before);
    // SIGTERM to npx's process group stopped the server npx started too, within 10 s.
    expect(served.lingered).toBe(false);
    void annotate(`listening ${served.elapsedMs} ms after npx started`);
  });

  it("prints what to do next: the dashboard's address, where the secret is, how to point it at a model", () => {
    const entries = served.stderr.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, string>);
    const next = entries.find((entry) => entry.msg === "what to do next");
    const url = /listening on (\S+)/.exec(served.stdout)![1]!;
    expect(next).toMatchObject({ dashboard: `${url}/`, secret: `generated now, stored in ${served.secretFile} (mode 0600)` });
    expect(next!.api).toBe(`curl -H "Authorization: Bearer $(cat ${served.secretFile})" ${url}/sessions`);
    expect(next!.model).toMatch(/^not ready, chat fails until it is: no model configured/);
    expect(next!.modelHint).toContain("VEIL_BASE_URL=");
    expect(next!.modelHint).toContain(join(clone, ".veil", "settings.json"));
  });

  it("the address is the dashboard and the API, and the stored secret opens it", () => {
    expect(served.health).toMatchObject({ ok: true });
    expect(served.page).toContain('src="/dashboard/app.js"');
    expect(served.sessions).toBe(200);
  });
});

describe("the build stamp that prepare compares", () => {
  it("matches the sources it was written for, and no longer once a source changes or an output is gone", () => {
    const tree = realpathSync(mkdtempSync(join(tmpdir(), "veil-stamp-")));
    try {
      const write = (path: string, text: string) => {
        mkdirSync(join(tree, path, ".."), { recursive: true });
        writeFileSync(join(tree, path), text);
      };
      write("package.json", "{}");
      write("src/main.ts", "one");
      write("dashboard/src/app.ts", "page");
      for (const output of BUILD_OUTPUTS) write(output, "built");
      write("dist/.build-stamp", `${sourceStamp(tree)}\n`);
      expect(builtStamp(tree)).toBe(sourceStamp(tree));
      // Outputs are not inputs: dist/ and node_modules may change without a rebuild.
      write("dist/src/extra.js", "x");
      write("node_modules/pkg/index.js", "x");
      expect(builtStamp(tree)).toBe(sourceStamp(tree));
      write("src/main.ts", "two");
      expect(builtStamp(tree)).not.toBe(sourceStamp(tree));
      write("src/main.ts", "one");
      write("src/new.ts", "");
      expect(builtStamp(tree)).not.toBe(sourceStamp(tree));
      rmSync(join(tree, "src/new.ts"));
      expect(builtStamp(tree)).toBe(sourceStamp(tree));
      rmSync(join(tree, BUILD_OUTPUTS[1]!));
      expect(builtStamp(tree)).toBeNull();
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });
});

/**
 * Runs the command in `cwd` until it listens, asks the server a few things, then stops it with
 * SIGTERM. `npx` runs `veil serve` as a child of its own, which a signal to npx alone does not
 * reach (it lived on after the test), so the command gets a process group and the whole group is
 * stopped, and waited for.
 */
async function serveOnce(cwd: string, home: string, argv: string[]) {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, VEIL_HOME: join(home, ".veil"), npm_config_cache: join(home, "npm-cache"), npm_config_offline: "true", npm_config_update_notifier: "false" };
  writeFileSync(join(home, ".npmrc"), "fund=false\naudit=false\n");
  const started = performance.now();
  const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let stdout = "";
  let stderr = "";
  const nextPrinted = new Promise<void>((resolve) =>
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      if (stderr.includes("what to do next")) resolve();
    }),
  );
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`${argv.join(" ")} exited (${code}) before listening:\n${stdout}\n${stderr}`)));
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      const match = /listening on (\S+)\n/.exec(stdout);
      if (match) resolve(match[1]!);
    });
  });
  const elapsedMs = Math.round(performance.now() - started);
  const secretFile = join(cwd, ".veil", "secret");
  const secret = readFileSync(secretFile, "utf8").trim();
  const health = await (await fetch(`${url}/health`)).json();
  const page = await (await fetch(`${url}/`)).text();
  const sessions = (await fetch(`${url}/sessions`, { headers: { authorization: `Bearer ${secret}` } })).status;
  // Written right after the listening line.
  await Promise.race([nextPrinted, exited]);
  signalGroup(child.pid!, "SIGTERM");
  await exited;
  const lingered = await groupGone(child.pid!);
  return { stdout, stderr, elapsedMs, health, page, sessions, secretFile, lingered };
}

function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Whether a process of group `pgid` still runs (a zombie does not: in a container nobody may reap it). */
function groupRuns(pgid: number): boolean {
  return processes().some((p) => p.pgrp === pgid && p.state !== "Z");
}

/** Waits until no process of the group runs; true when one still ran after 10 s (then killed). */
async function groupGone(pgid: number): Promise<boolean> {
  const deadline = Date.now() + 10_000;
  while (groupRuns(pgid)) {
    if (Date.now() > deadline) {
      signalGroup(pgid, "SIGKILL");
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

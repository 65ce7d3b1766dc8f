/**
 * `veil serve` as a real child process (dist/src/main.js), for tests that must watch the
 * server from outside: its event loop, its children, its leftovers after a kill -9.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { present } from "./requirements.js";

// From test/helpers the build is in dist/; compiled into dist/test/helpers (benchmarks), it is ../../src.
const CANDIDATES = ["../../dist/src/main.js", "../../src/main.js"].map((path) => fileURLToPath(new URL(path, import.meta.url)));
export const MAIN = CANDIDATES.find((path) => existsSync(path)) ?? CANDIDATES[0]!;
export const built = present(`the build (${MAIN})`, existsSync(MAIN));
export const SPAWNED_SECRET = "spawned-secret";

export interface SpawnedServer {
  url: string;
  child: ChildProcess;
  /** stderr so far (the server's log). */
  stderr(): string;
  /** fetch with the bearer secret (and a JSON content type when there is a body). */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** SIGKILL, resolved when the process is gone. */
  kill(): Promise<void>;
}

/** Starts `veil serve --port 0` in `workspace` against `baseUrl` (the fake LLM) and waits for its listening line. */
export async function spawnServer(workspace: string, options: { baseUrl: string; env?: Record<string, string> }): Promise<SpawnedServer> {
  const home = join(workspace, ".veil-home");
  mkdirSync(home, { recursive: true });
  // A private temp dir: the server's start-up cleanup looks at $TMPDIR, which other test runs share.
  const ownTmp = options.env?.TMPDIR ? undefined : mkdtempSync(join(tmpdir(), "veil-spawned-tmp-"));
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    VEIL_BASE_URL: options.baseUrl,
    VEIL_API_KEY: "sk-test",
    VEIL_MODEL: "fake-model",
    VEIL_HOME: home,
    // The machine's ~/.bashrc stays out of the nodes' shells: slow to start (pyenv here), and a
    // shell SIGKILLed mid-rc (kill -9 of a node) can leave its scripts' lock files behind.
    HOME: home,
    VEIL_SECRET: SPAWNED_SECRET,
    ...(ownTmp ? { TMPDIR: ownTmp } : {}),
    ...options.env,
  };
  const child = spawn(process.execPath, [MAIN, "serve", "--port", "0", "--workspace", workspace], { cwd: workspace, env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = await listeningUrl(child, () => stderr);
  return {
    url,
    child,
    stderr: () => stderr,
    fetch: (path, init = {}) =>
      fetch(`${url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${SPAWNED_SECRET}`, ...(init.body ? { "content-type": "application/json" } : {}), ...(init.headers as Record<string, string>) },
      }),
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
      if (ownTmp) rmSync(ownTmp, { recursive: true, force: true });
    },
  };
}

/** The URL from `veil serve`'s "listening on …" line; rejects with its stderr if it exits first. */
export function listeningUrl(child: ChildProcess, stderr: () => string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let stdout = "";
    child.stdout!.on("data", (d: Buffer) => {
      stdout += d.toString();
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`veil serve exited (${code}) before listening: ${stderr()}`)));
  });
}

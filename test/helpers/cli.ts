import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { present } from "./requirements.js";

/** The built `veil` binary (tests spawn it as users do). */
export const VEIL_MAIN = fileURLToPath(new URL("../../dist/src/main.js", import.meta.url));
export const veilBuilt = present(`the build (${VEIL_MAIN})`, existsSync(VEIL_MAIN));

export interface Spawned {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface SpawnVeilOptions {
  cwd: string;
  env: Record<string, string | undefined>;
  /** Written to stdin, then closed; without it stdin is /dev/null. */
  stdin?: string;
  /** Called with the stdout so far; `kill` sends SIGTERM. */
  onStdout?: (text: string, kill: () => void) => void;
  /** An installed `veil` executable to run instead of `node dist/src/main.js`. */
  bin?: string;
  /** Run as this user and group (a test running as root checks what an ordinary user meets). */
  uid?: number;
  gid?: number;
}

/** Spawns `node dist/src/main.js ARGS`; variables set to undefined in `env` are removed. */
export function spawnVeil(args: string[], options: SpawnVeilOptions): Promise<Spawned> {
  return new Promise((resolve, reject) => {
    const env = { ...options.env };
    for (const [key, value] of Object.entries(env)) if (value === undefined) delete env[key];
    const [command, argv] = options.bin ? [options.bin, args] : [process.execPath, [VEIL_MAIN, ...args]];
    const child = spawn(command, argv, { cwd: options.cwd, env, uid: options.uid, gid: options.gid, stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    if (options.stdin !== undefined) child.stdin!.end(options.stdin);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      options.onStdout?.(stdout, () => child.kill("SIGTERM"));
    });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

import { spawn } from "node:child_process";
import { StringDecoder } from "node:string_decoder";
import type { Disposable, ToolContext } from "../types.js";

/** Runtime resource key: rg is looked up once per runtime. */
export const RIPGREP_KEY = "files.ripgrep";

/**
 * Finds `rg` once per runtime by running `<command> --version` (PATH lookup is left to
 * spawn, so tools never read the environment themselves).
 */
export class RipgrepLocator implements Disposable {
  private probe?: Promise<string | null>;

  constructor(private readonly command = "rg") {}

  locate(): Promise<string | null> {
    this.probe ??= new Promise((resolve) => {
      const child = spawn(this.command, ["--version"], { stdio: ["ignore", "pipe", "ignore"] });
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
      child.on("error", () => resolve(null));
      child.on("close", (code) => resolve(code === 0 && out.startsWith("ripgrep") ? this.command : null));
    });
    return this.probe;
  }

  dispose(): void {
    this.probe = undefined;
  }
}

/**
 * The rg binary to use, or null for the pure-Node fallback.
 * `ctx.services.ripgrepPath`: null forces the fallback, a string names the binary,
 * absent means "detect rg on PATH".
 */
export async function ripgrepPath(ctx: Pick<ToolContext, "services" | "runtime">): Promise<string | null> {
  const override = ctx.services.ripgrepPath;
  if (override === null) return null;
  if (typeof override === "string") return override;
  return ctx.runtime.get(RIPGREP_KEY, () => new RipgrepLocator()).locate();
}

/** Flags both glob and grep use: hidden files in, ignore files off, no user config. */
export const RG_BASE_ARGS = ["--no-config", "--hidden", "--no-ignore", "--color", "never"];

export interface RipgrepRun {
  binary: string;
  args: string[];
  cwd: string;
  signal?: AbortSignal;
  /** Called per stdout line; return false to stop rg early. */
  onLine(line: string): boolean | void;
}

export interface RipgrepResult {
  /** 0 = matches, 1 = none, 2 = error (possibly with partial results). */
  code: number | null;
  stderr: string;
  /** True when onLine asked to stop. */
  stopped: boolean;
}

/** Runs rg and streams its stdout line by line. */
export function runRipgrep(run: RipgrepRun): Promise<RipgrepResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(run.binary, run.args, { cwd: run.cwd, stdio: ["ignore", "pipe", "pipe"] });
    const decoder = new StringDecoder("utf8");
    let pending = "";
    let stderr = "";
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      child.kill("SIGTERM");
    };
    const onAbort = () => stop();
    if (run.signal?.aborted) stop();
    else run.signal?.addEventListener("abort", onAbort, { once: true });
    const feed = (text: string) => {
      if (stopped) return;
      pending += text;
      let start = 0;
      for (let nl = pending.indexOf("\n", start); nl !== -1; nl = pending.indexOf("\n", start)) {
        const line = pending.slice(start, nl);
        start = nl + 1;
        if (run.onLine(line) === false) {
          stop();
          break;
        }
      }
      pending = stopped ? "" : pending.slice(start);
    };
    child.stdout.on("data", (chunk: Buffer) => feed(decoder.write(chunk)));
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 8192) stderr += chunk.toString();
    });
    child.on("error", (error) => {
      run.signal?.removeEventListener("abort", onAbort);
      reject(error);
    });
    child.on("close", (code) => {
      run.signal?.removeEventListener("abort", onAbort);
      feed(decoder.end());
      if (pending !== "" && !stopped) run.onLine(pending);
      resolve({ code, stderr, stopped });
    });
  });
}

/** rg prints `./x` when given `.`; we want `x`. */
export function stripDotSlash(path: string): string {
  return path.startsWith("./") ? path.slice(2) : path;
}

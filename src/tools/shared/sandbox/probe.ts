import { spawn, spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { DetectOnce } from "../detect-once.js";

/** What the machine can do: bubblewrap found and working, with the flags this version knows. */
export type SandboxSupport =
  | { available: true; backend: "bubblewrap"; bwrap: string; flags: readonly string[] }
  | { available: false; backend: null; reason: string };

/** Runtime resource key: support is detected once per runtime. */
export const SANDBOX_SUPPORT_KEY = "sandbox.support";

/**
 * Namespaces every sandbox gets: its own user (capabilities dropped, so nothing inside can
 * remount what it was given), PIDs (no host process visible; the sandbox dies with its
 * PID 1), IPC and host name; and it dies with the process that started it.
 */
export const BASE_FLAGS = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--cap-drop", "ALL"];
/** bubblewrap ≥ 0.8: no user namespace can be made inside (no way to start afresh with new capabilities). */
const NO_NESTED_USERNS = ["--disable-userns"];
/**
 * `--as-pid-1`: `true` is the namespace's PID 1 itself, a child the probe's bwrap waits for.
 * Without it bwrap puts a PID 1 of its own in between and exits as soon as that one reports
 * `true`'s status, before it has exited: an orphan left to the host's init (bubblewrap ≥ 0.3;
 * every distribution Node 20 runs on has one).
 */
const PROBE_TAIL = ["--unshare-net", "--as-pid-1", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"];
const PROBE_TIMEOUT_MS = 5_000;

/** The `bwrap` executable on PATH, if any. */
export function findBwrap(path = process.env.PATH ?? ""): string | null {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, "bwrap");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

function candidates(): (readonly string[])[] {
  return [[...BASE_FLAGS, ...NO_NESTED_USERNS], BASE_FLAGS];
}

function unavailable(reason: string): SandboxSupport {
  return { available: false, backend: null, reason };
}

const NOT_FOUND = "bubblewrap (bwrap) is not on PATH; install it (Debian/Ubuntu: apt-get install bubblewrap)";

/** Runs a throw-away sandbox with each flag set, richest first. */
export function detectSandbox(platform: NodeJS.Platform = process.platform, path = process.env.PATH): SandboxSupport {
  if (platform !== "linux") return unavailable(`no sandbox backend on ${platform} (bubblewrap needs Linux)`);
  const bwrap = findBwrap(path);
  if (!bwrap) return unavailable(NOT_FOUND);
  let last = "";
  for (const flags of candidates()) {
    const probe = spawnSync(bwrap, [...flags, ...PROBE_TAIL], { stdio: ["ignore", "ignore", "pipe"], timeout: PROBE_TIMEOUT_MS });
    if (probe.status === 0) return { available: true, backend: "bubblewrap", bwrap, flags };
    last = probe.stderr?.toString("utf8").trim() || probe.error?.message || `exit status ${probe.status}`;
  }
  return unavailable(`bwrap cannot make a sandbox here: ${last}`);
}

/** detectSandbox(), without blocking the event loop. */
export async function detectSandboxAsync(platform: NodeJS.Platform = process.platform, path = process.env.PATH): Promise<SandboxSupport> {
  if (platform !== "linux") return unavailable(`no sandbox backend on ${platform} (bubblewrap needs Linux)`);
  const bwrap = findBwrap(path);
  if (!bwrap) return unavailable(NOT_FOUND);
  let last = "";
  for (const flags of candidates()) {
    const outcome = await new Promise<{ ok: boolean; detail: string }>((resolve) => {
      const probe = spawn(bwrap, [...flags, ...PROBE_TAIL], { stdio: ["ignore", "ignore", "pipe"], timeout: PROBE_TIMEOUT_MS });
      let stderr = "";
      probe.stderr.on("data", (data: Buffer) => (stderr += data.toString("utf8")));
      probe.once("error", (error) => resolve({ ok: false, detail: error.message }));
      probe.once("close", (code) => resolve({ ok: code === 0, detail: stderr.trim() || `exit status ${code}` }));
    });
    if (outcome.ok) return { available: true, backend: "bubblewrap", bwrap, flags };
    last = outcome.detail;
  }
  return unavailable(`bwrap cannot make a sandbox here: ${last}`);
}

/** Holds the detection result for the runtime's lifetime. */
export class SandboxProbe extends DetectOnce<SandboxSupport> {
  private warned = false;

  constructor(detect: () => SandboxSupport = () => detectSandbox(), detectAsync: () => Promise<SandboxSupport> = () => detectSandboxAsync()) {
    super(detect, detectAsync);
  }

  /** Runs `warn` the first time only: a runtime without a sandbox says so once. */
  warnOnce(warn: () => void): void {
    if (this.warned) return;
    this.warned = true;
    warn();
  }
}

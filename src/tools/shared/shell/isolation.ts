import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { setTimeout as delay } from "node:timers/promises";
import { DetectOnce } from "../detect-once.js";
import { TAG_VARIABLE } from "./bash-script.js";

/**
 * How a shell and everything it starts are contained, so that killing a shell (timeout,
 * kill_shell, session close) also kills daemons its commands forked.
 *
 * - `pid-namespace`: the shell runs under `unshare --fork --pid --kill-child --mount-proc`.
 *   bash is PID 1 of a fresh PID namespace; when it dies (unshare dies → --kill-child
 *   SIGKILLs it) the kernel kills every process in the namespace, including ones that
 *   called `setsid` or were started with `nohup … &`. Needs root (or unprivileged user
 *   namespaces, tried second with `--user --map-current-user`).
 * - `process-group`: the fallback when unshare is missing or refused. The shell leads its
 *   own session/process group (spawn `detached`), which a signal to `-pgid` reaches; the
 *   daemons that left the group (setsid) are found by scanning /proc for the shell's
 *   tag variable ($VEIL_SHELL_TAG, exported in the shell and inherited by descendants).
 *   A process that wipes its environment (`env -i`) escapes this fallback.
 * - `sandbox`: the shell runs under bubblewrap (see ../sandbox/), which makes a PID
 *   namespace too: bwrap → its PID 1 (a second bwrap) → bash. Killing the first bwrap
 *   takes the namespace down (--die-with-parent); a gentler signal goes to the processes
 *   inside only, since a bwrap that dies of it would SIGKILL them at once.
 */
export type IsolationMode = "pid-namespace" | "process-group" | "sandbox";

export interface Isolation {
  mode: IsolationMode;
  /** argv placed before `bash …` (unshare, and setpriv --pdeathsig where available). */
  prefix: readonly string[];
}

/** Runtime resource key: support is detected once per runtime. */
export const ISOLATION_KEY = "bash.isolation";

const NAMESPACE = ["unshare", "--fork", "--pid", "--kill-child", "--mount-proc"];
const USER_NAMESPACE = ["unshare", "--user", "--map-current-user", "--fork", "--pid", "--kill-child", "--mount-proc"];
/** Dies with its parent: if the runtime itself is killed, the shells do not outlive it. */
const PARENT_DEATH = ["setpriv", "--pdeathsig", "KILL"];

export const PROCESS_GROUP: Isolation = { mode: "process-group", prefix: [] };

const PROBE_TIMEOUT_MS = 5_000;

function works(prefix: readonly string[]): boolean {
  const probe = spawnSync(prefix[0]!, [...prefix.slice(1), "true"], { stdio: "ignore", timeout: PROBE_TIMEOUT_MS });
  return probe.status === 0;
}

/** works(), without blocking the event loop. */
function worksAsync(prefix: readonly string[]): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = spawn(prefix[0]!, [...prefix.slice(1), "true"], { stdio: "ignore", timeout: PROBE_TIMEOUT_MS });
    probe.once("error", () => resolve(false));
    probe.once("exit", (code) => resolve(code === 0));
  });
}

/** Tries each namespace prefix (with setpriv's parent-death signal when available) with `true`. */
export function detectIsolation(platform: NodeJS.Platform = process.platform): Isolation {
  if (platform !== "linux") return PROCESS_GROUP;
  const deathSignal = works(PARENT_DEATH) ? PARENT_DEATH : [];
  for (const namespace of [NAMESPACE, USER_NAMESPACE]) {
    const prefix = [...deathSignal, ...namespace];
    if (works(prefix)) return { mode: "pid-namespace", prefix };
  }
  return { mode: "process-group", prefix: deathSignal };
}

/** detectIsolation(), without blocking the event loop (the same probes, in the same order). */
export async function detectIsolationAsync(platform: NodeJS.Platform = process.platform): Promise<Isolation> {
  if (platform !== "linux") return PROCESS_GROUP;
  const deathSignal = (await worksAsync(PARENT_DEATH)) ? PARENT_DEATH : [];
  for (const namespace of [NAMESPACE, USER_NAMESPACE]) {
    const prefix = [...deathSignal, ...namespace];
    if (await worksAsync(prefix)) return { mode: "pid-namespace", prefix };
  }
  return { mode: "process-group", prefix: deathSignal };
}

/** Holds the detection result for the runtime's lifetime. */
export class IsolationProbe extends DetectOnce<Isolation> {
  constructor(detect: () => Isolation = detectIsolation, detectAsync: () => Promise<Isolation> = detectIsolationAsync) {
    super(detect, detectAsync);
  }
}

/** True while `pid` exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === "EPERM";
    }
  }
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone (ESRCH), or not ours (EPERM): nothing to do.
  }
}

/** PIDs of live processes whose environment carries `VEIL_SHELL_TAG=<tag>`. */
export function taggedProcesses(tag: string, procRoot = "/proc"): number[] {
  const needle = Buffer.from(`${TAG_VARIABLE}=${tag}\0`);
  let entries: string[];
  try {
    entries = readdirSync(procRoot);
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`${procRoot}/${entry}/environ`).includes(needle)) found.push(Number(entry));
    } catch {
      // Exited meanwhile, or not readable.
    }
  }
  return found;
}

/**
 * Direct children of `pid` (via /proc/<pid>/task/<pid>/children, else a ppid scan). A process
 * that is gone has none: the scan, which reads every process's stat on the host, is only for
 * a kernel without CONFIG_PROC_CHILDREN.
 */
export function childrenOf(pid: number, procRoot = "/proc"): number[] {
  try {
    return readFileSync(`${procRoot}/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    if (!existsSync(`${procRoot}/${pid}`)) return [];
  }
  const found: number[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync(procRoot);
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`${procRoot}/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** A spawned shell as far as killing it is concerned. */
export interface KillTarget {
  /** PID of the spawned process (unshare or bash); it leads its own process group. */
  pid: number;
  tag: string;
  mode: IsolationMode;
}

/**
 * Signals a shell's whole tree. The process group is always signalled; in process-group
 * mode the tagged strays are too. In namespace mode SIGKILL to the group kills unshare,
 * which takes the namespace down with it.
 */
export function signalTree(target: KillTarget, signal: NodeJS.Signals): void {
  if (target.mode === "sandbox" && signal !== "SIGKILL") {
    for (const pid of insideSandbox(target.pid)) signalQuietly(pid, signal);
    return;
  }
  signalQuietly(-target.pid, signal);
  if (target.mode === "process-group") {
    for (const pid of taggedProcesses(target.tag)) signalQuietly(pid, signal);
  }
}

/**
 * SIGTERMs every descendant of `pid` (not `pid` itself), e.g. the scripts ~/.bashrc runs,
 * so they get to run their exit traps before the tree is SIGKILLed. Returns the ones that
 * do not ignore SIGTERM: those worth waiting for.
 */
export function terminateDescendants(target: Pick<KillTarget, "pid" | "mode">): number[] {
  const inside = target.mode === "sandbox" ? insideSandbox(target.pid) : descendantsOf(target.pid);
  const heeding = [...inside].filter((pid) => !ignoresTerm(pid));
  for (const descendant of inside) signalQuietly(descendant, "SIGTERM");
  return heeding;
}

/** SIGTERM's bit (signal 15, bit 14) in /proc's SigIgn mask: interactive bash ignores it. */
const TERM_BIT = 1n << 14n;

function ignoresTerm(pid: number): boolean {
  try {
    const mask = /^SigIgn:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return mask !== undefined && (BigInt(`0x${mask}`) & TERM_BIT) !== 0n;
  } catch {
    return false;
  }
}

/** Waits (real time: this waits on the kernel) until none of `pids` is alive, at most `limitMs`. */
export async function waitForExit(pids: number[], limitMs: number): Promise<void> {
  for (let waited = 0; pids.some(isAlive) && waited < limitMs; waited += KILL_POLL_MS) await delay(KILL_POLL_MS);
}

function descendantsOf(pid: number): Set<number> {
  const seen = new Set<number>();
  const queue = childrenOf(pid);
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (seen.has(next)) continue;
    seen.add(next);
    queue.push(...childrenOf(next));
  }
  return seen;
}

/** The processes of a sandbox started as `pid`: everything below its PID 1 (the inner bwrap). */
function insideSandbox(pid: number): Set<number> {
  const inside = new Set<number>();
  for (const init of childrenOf(pid)) for (const descendant of descendantsOf(init)) inside.add(descendant);
  return inside;
}

/** How long killTree lets the spawned process reap its killed init before killing it too. */
const INIT_REAP_WAIT_MS = 500;

/**
 * SIGKILLs a namespace's init before the process that spawned it (unshare, or the outer
 * bwrap), and waits for that process to see it die and exit on its own. Killed together (one
 * signal to the group), the spawner often dies first and its init is orphaned: re-parented
 * to the host's init or the nearest sub-reaper, where a PID 1 that reaps nothing (a
 * container's) keeps it as a zombie, one per shell. The init's death ends the namespace, so
 * nothing inside outlives this either way.
 */
async function killInitsFirst(spawned: number, inits: number[]): Promise<void> {
  if (inits.length === 0) return;
  for (const init of inits) signalQuietly(init, "SIGKILL");
  await pollUntil(() => !isAlive(spawned), INIT_REAP_WAIT_MS);
}

/**
 * Checks `done` until it holds or `maxMs` has passed (true: it held). Real time on purpose:
 * this waits on the kernel, not on anything a test clock models. What it waits for is usually
 * over within a millisecond or two, so the polls start at 1 ms and double up to KILL_POLL_MS.
 */
async function pollUntil(done: () => boolean, maxMs: number): Promise<boolean> {
  for (let waited = 0, pause = 1; ; waited += pause, pause = Math.min(pause * 2, KILL_POLL_MS)) {
    if (done()) return true;
    if (waited >= maxMs) return false;
    await delay(pause);
  }
}

/** How long killTree waits for stragglers before giving up. */
const KILL_WAIT_MS = 3_000;
const KILL_POLL_MS = 10;

/**
 * SIGKILLs the tree, then waits until none of it is left: in namespace mode until the
 * namespace's init is gone (teardown is asynchronous to the reaping of unshare), else until
 * no tagged process is. Gives up after a few seconds; returns the PIDs still alive.
 */
export async function killTree(target: KillTarget): Promise<number[]> {
  // The namespace's init (unshare's child) finishes dying only once the namespace is
  // empty, so waiting for it covers every process in it, tagged or not (forked, not exec'd).
  const inits = target.mode === "process-group" ? [] : childrenOf(target.pid);
  // The /proc scan for the tag reads every process's environment with the event loop
  // stopped (10 ms on a busy machine, seconds for a server closing 200 sessions): only
  // when there is no init to wait on.
  const scan = inits.length === 0;
  await killInitsFirst(target.pid, inits);
  signalTree(target, "SIGKILL");
  let left: number[] = [];
  // Closing a session need not sit out a whole 10 ms poll (pollUntil starts at 1 ms).
  await pollUntil(() => {
    left = [...inits, ...(scan ? taggedProcesses(target.tag) : [])].filter(isAlive);
    for (const pid of left) signalQuietly(pid, "SIGKILL");
    return left.length === 0;
  }, KILL_WAIT_MS);
  return left;
}

/**
 * A real `veil serve` (dist/src/main.js) in a child process for the server benchmarks, the
 * fake LLM it talks to, a client process (load-client.ts) for SSE readers and latency
 * probes, and the server's CPU time and RSS from /proc.
 */
import { fork, spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { reply, startFakeLlm, type FakeLlm, type FakeRequest } from "../test/helpers/fake-llm.js";
import { listeningUrl } from "../test/helpers/spawned-server.js";
import { LOOP_DELAY_ENV, type LoopDelayReport } from "../src/server/loop-delay.js";
import type { LoadCommand, LoadReport } from "./load-client.js";

/** VEIL_BENCH_MAIN=path/to/dist/src/main.js runs another build (an older commit's) under the same bench, for before/after figures. */
const MAIN = process.env.VEIL_BENCH_MAIN ?? fileURLToPath(new URL("../src/main.js", import.meta.url));
const LOAD_CLIENT = fileURLToPath(new URL("./load-client.js", import.meta.url));
const SECRET = "bench-secret";
/** Linux reports CPU time in clock ticks of 1/100 s (USER_HZ). */
const CLOCK_TICKS = 100;

export interface BenchServer {
  url: string;
  secret: string;
  pid: number;
  workspace: string;
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** The last few KB the server wrote to stderr. */
  stderr(): string;
  /** User + system CPU seconds the server process has used so far. */
  cpuSeconds(): number;
  /** CPU seconds of the server's spawn helper process (spawn-helper-main.js), 0 when there is none. */
  helperCpuSeconds(): number;
  /**
   * Seconds the server's main thread has waited, runnable, for a CPU so far (schedstat): on a
   * machine shared with other work, what its event loop lost to other processes.
   */
  cpuWaitSeconds(): number;
  rssBytes(): number;
  /** True once the server process has exited (or crashed). */
  exited(): boolean;
  /** Resolves when the server process exits. */
  whenExited(): Promise<void>;
  /** The spawn helper's RSS, 0 when there is none. */
  helperRssBytes(): number;
  /**
   * Resets the kernel's peak-RSS mark (VmHWM) of the server and its spawn helper to their
   * current RSS (false where /proc/PID/clear_refs is not writable); peakRssBytes() then
   * reads the highest RSS since, however short the peak was.
   */
  resetPeakRss(): boolean;
  peakRssBytes(): { server: number; helper: number };
  /** SIGTERM (a clean shutdown, so a --cpu-prof profile is written), then the folders go. */
  stop(): Promise<void>;
  /**
   * After stop(): how late the server's event loop ran each 5 ms tick between two
   * process.hrtime readings (µs) of this process (the clock is the machine's monotonic one).
   */
  loopDelays(fromUs: number, toUs: number): { late: number; waited: number }[];
}

/** process.hrtime in µs, the clock of LoopDelayReport. */
export function nowUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/**
 * Starts `veil serve --port 0` in a fresh workspace. With VEIL_BENCH_CPU_PROF=DIR in the
 * environment the server runs under `node --cpu-prof` and writes its profile to DIR.
 */
export async function startBenchServer(options: { llm: FakeLlm; settings?: object; name: string }): Promise<BenchServer> {
  const workspace = mkdtempSync(join(tmpdir(), `veil-bench-${options.name}-`));
  mkdirSync(join(workspace, ".veil"), { recursive: true });
  if (options.settings) writeFileSync(join(workspace, ".veil", "settings.json"), JSON.stringify(options.settings));
  writeFileSync(join(workspace, "notes.txt"), "a needle in\na haystack\n");
  const home = join(workspace, ".veil-home");
  const ownTmp = join(workspace, ".tmp");
  mkdirSync(ownTmp, { recursive: true });
  const profDir = process.env.VEIL_BENCH_CPU_PROF;
  const profName = `${options.name}-${Date.now()}`;
  const nodeArgs = profDir ? ["--cpu-prof", "--cpu-prof-dir", profDir, "--cpu-prof-name", `${profName}.cpuprofile`] : [];
  // VEIL_BENCH_NODE_ARGS="--trace-gc --heapsnapshot-signal=SIGUSR2": node flags for the server alone (NODE_OPTIONS refuses some and reaches its children too).
  nodeArgs.push(...(process.env.VEIL_BENCH_NODE_ARGS ?? "").split(/\s+/).filter(Boolean));
  const loopDelayFile = join(workspace, ".loop-delay.json");
  let loopDelay: LoopDelayReport | undefined;
  const env = {
    ...process.env,
    VEIL_BASE_URL: options.llm.baseUrl,
    VEIL_API_KEY: "sk-bench",
    VEIL_MODEL: "fake-model",
    VEIL_HOME: home,
    VEIL_SECRET: SECRET,
    VEIL_LOG_LEVEL: "warn",
    TMPDIR: ownTmp,
    // The shells read this HOME's (empty) ~/.bashrc, not the machine user's: the figures do not
    // depend on what it runs, and a shell killed mid-~/.bashrc leaves no lock behind there.
    HOME: home,
    [LOOP_DELAY_ENV]: loopDelayFile,
  };
  const child = spawn(process.execPath, [...nodeArgs, MAIN, "serve", "--port", "0", "--workspace", workspace], { cwd: workspace, env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
    if (process.env.VEIL_BENCH_DEBUG) process.stderr.write(d);
  });
  if (process.env.VEIL_BENCH_DEBUG) child.stdout!.on("data", (d: Buffer) => process.stderr.write(d));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = await listeningUrl(child, () => stderr);
  const pid = child.pid!;
  if (process.env.VEIL_BENCH_DEBUG) console.error(`server pid ${pid} at ${url}; fake LLM at ${options.llm.baseUrl}`);
  return {
    url,
    secret: SECRET,
    pid,
    workspace,
    fetch: (path, init = {}) =>
      fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${SECRET}`, ...(init.body ? { "content-type": "application/json" } : {}) } }).catch((error: Error) => {
        const cause = (error.cause as Error | undefined)?.message;
        const state = child.exitCode !== null || child.signalCode !== null ? `server exited (${child.exitCode ?? child.signalCode})` : "server running";
        throw new Error(`${init.method ?? "GET"} ${path}: ${error.message}${cause ? ` (${cause})` : ""}; ${state}; stderr: ${stderr.slice(-1500)}`);
      }),
    stderr: () => stderr,
    cpuSeconds: () => processCpuSeconds(pid),
    helperCpuSeconds() {
      const helper = helperPid(pid);
      return helper ? processCpuSeconds(helper) : 0;
    },
    cpuWaitSeconds() {
      try {
        return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[1]) / 1e9;
      } catch {
        return NaN;
      }
    },
    rssBytes: () => statusBytes(pid, "VmRSS"),
    exited: () => child.exitCode !== null || child.signalCode !== null,
    whenExited: () => exited,
    helperRssBytes() {
      const helper = helperPid(pid);
      return helper ? statusBytes(helper, "VmRSS") : 0;
    },
    resetPeakRss() {
      const helper = helperPid(pid);
      try {
        for (const target of helper ? [pid, helper] : [pid]) writeFileSync(`/proc/${target}/clear_refs`, "5");
        return true;
      } catch {
        return false;
      }
    },
    peakRssBytes() {
      const helper = helperPid(pid);
      return { server: statusBytes(pid, "VmHWM"), helper: helper ? statusBytes(helper, "VmHWM") : 0 };
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
      if (existsSync(loopDelayFile)) {
        loopDelay = JSON.parse(readFileSync(loopDelayFile, "utf8")) as LoopDelayReport;
        // Beside the profile, to line its stalls up with the samples (the same clock).
        if (profDir) copyFileSync(loopDelayFile, join(profDir, `${profName}.loop-delay.json`));
      }
      rmSync(workspace, { recursive: true, force: true });
    },
    loopDelays: (fromUs, toUs) => (loopDelay?.ticks ?? []).filter(([at]) => at >= fromUs && at <= toUs).map(([, late, waited]) => ({ late, waited })),
  };
}

/** The server's spawn helper (spawn-helper-main.js), if it has started one. */
function helperPid(serverPid: number): number | undefined {
  let children: string[];
  try {
    children = readFileSync(`/proc/${serverPid}/task/${serverPid}/children`, "utf8").trim().split(/\s+/).filter(Boolean);
  } catch {
    return undefined;
  }
  const helper = children.find((child) => {
    try {
      return readFileSync(`/proc/${child}/cmdline`, "utf8").includes("spawn-helper-main");
    } catch {
      return false;
    }
  });
  return helper ? Number(helper) : undefined;
}

/** A `kB` line of /proc/PID/status (VmRSS, VmHWM) in bytes; 0 once the process is gone. */
function statusBytes(pid: number, field: "VmRSS" | "VmHWM"): number {
  try {
    const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

function processCpuSeconds(pid: number): number {
  // Fields after the command name (which is in parentheses): utime is the 12th, stime the 13th.
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

export interface LoadClient {
  send(command: LoadCommand): Promise<void>;
  stop(): Promise<LoadReport>;
}

/** Forks load-client.js; send() resolves when the client says it is ready. */
export function startLoadClient(): LoadClient {
  const child: ChildProcess = fork(LOAD_CLIENT, [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const next = () =>
    new Promise<any>((resolve, reject) => {
      child.once("message", (m: any) => (m?.error ? reject(new Error(m.error)) : resolve(m)));
      child.once("exit", (code) => reject(new Error(`load client exited (${code})`)));
    });
  return {
    async send(command) {
      const answer = next();
      child.send(command);
      await answer;
    },
    async stop() {
      const answer = next();
      child.send({ cmd: "stop" });
      const report = (await answer) as LoadReport;
      child.kill();
      return report;
    },
  };
}

/**
 * The scripted model: each turn makes `toolSteps` short tool calls (alternately `bash` and
 * `read_file`), then answers in `textChunks` streamed deltas. A step is known from the tool
 * results after the turn's last user message, so any number of sessions can share one fake.
 */
export async function startScriptedLlm(options: { toolSteps: number; textChunks: number; bashCommand?: string }): Promise<FakeLlm> {
  const llm = await startFakeLlm();
  llm.respond((req: FakeRequest) => {
    const messages: { role: string }[] = req.body?.messages ?? [];
    let step = 0;
    for (let i = messages.length - 1; i >= 0 && messages[i]!.role !== "user"; i--) if (messages[i]!.role === "tool") step++;
    if (step < options.toolSteps) {
      return step % 2 === 0
        ? reply().tool("bash", { command: options.bashCommand ?? "echo ok" }).stop()
        : reply().tool("read_file", { path: "notes.txt" }).stop();
    }
    const r = reply();
    for (let i = 0; i < options.textChunks; i++) r.text(`word${i} `);
    return r.stop();
  });
  return llm;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** One non-streaming turn over HTTP; resolves with its wall time in ms. With `answer`, the reply's content must be it. */
export async function timedTurn(server: BenchServer, sessionId: string, message: string, answer?: string): Promise<number> {
  const t0 = performance.now();
  const res = await server.fetch(`/sessions/${sessionId}/chat`, { method: "POST", body: JSON.stringify({ message }) });
  const body = (await res.json()) as { content?: string; error?: { message: string } };
  if (!res.ok) throw new Error(`turn failed: HTTP ${res.status} ${body.error?.message ?? ""}`);
  if (answer !== undefined && body.content?.trim() !== answer.trim()) throw new Error(`turn answered ${JSON.stringify(body.content)}, not ${JSON.stringify(answer)}`);
  return performance.now() - t0;
}

export async function createSession(server: BenchServer): Promise<string> {
  const res = await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "default" }) });
  const body = (await res.json()) as { id: string; error?: { message: string } };
  if (!res.ok) throw new Error(`create session failed: HTTP ${res.status} ${body.error?.message ?? ""}`);
  return body.id;
}

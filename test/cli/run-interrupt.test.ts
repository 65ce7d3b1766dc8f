import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, watch, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { loadConfig } from "../../src/config/load.js";
import { openStore } from "../../src/store/open.js";
import { spawnVeil, VEIL_MAIN, veilBuilt, type Spawned } from "../helpers/cli.js";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let llm: FakeLlm;
let ws: TempWorkspace;
let env: Record<string, string>;
/** Process groups a test started that may outlive it (a slow hook's). */
const leftovers: number[] = [];

beforeEach(async () => {
  llm = await startFakeLlm();
  ws = tmpWorkspace();
  mkdirSync(join(ws.root, "home"), { recursive: true });
  // A private HOME: the machine's ~/.bashrc (pyenv…) is not under test, and on a busy machine
  // it holds each veil run's exit for seconds while its shells start.
  env = { ...(process.env as Record<string, string>), VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk", VEIL_MODEL: "fake-model", VEIL_HOME: join(ws.root, "home"), HOME: join(ws.root, "home"), NO_COLOR: "1" };
  for (const key of ["VEIL_SECRET", "FORCE_COLOR", "VEIL_LOG_LEVEL"]) delete env[key];
});
afterEach(async () => {
  for (const pgid of leftovers.splice(0)) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  await llm.close();
  ws.cleanup();
});

interface Output {
  /** Resolves once stderr matches. */
  stderrMatches(pattern: RegExp): Promise<void>;
}

/**
 * Spawns `veil run ARGS` in a process group of its own and presses Ctrl-C as a terminal does
 * (SIGINT to the whole foreground group) once each of `presses` has resolved, in order.
 */
function runWithCtrlC(args: string[], presses: ((output: Output) => Promise<void>)[]): Promise<Spawned & { presses: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [VEIL_MAIN, "run", ...args], { cwd: ws.root, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let pressed = 0;
    const waiters: { pattern: RegExp; resolve: () => void }[] = [];
    const output: Output = {
      stderrMatches: (pattern) => (pattern.test(stderr) ? Promise.resolve() : new Promise((resolve) => waiters.push({ pattern, resolve }))),
    };
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      for (const waiter of waiters.filter((w) => w.pattern.test(stderr))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    });
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, stdout, stderr, presses: pressed }));
    void (async () => {
      for (const ready of presses) {
        await ready(output);
        if (child.exitCode !== null) return;
        pressed += 1;
        process.kill(-child.pid!, "SIGINT");
      }
    })().catch(reject);
  });
}

/** Resolves once `file` exists (watching its folder, no polling). */
function fileAppears(file: string): Promise<void> {
  return new Promise((resolve) => {
    const watcher = watch(dirname(file), () => {
      if (!existsSync(file)) return;
      watcher.close();
      resolve();
    });
    if (existsSync(file)) {
      watcher.close();
      resolve();
    }
  });
}

async function storedSession() {
  const config = loadConfig({ workspace: ws.root, env });
  const store = await openStore(config);
  try {
    const [session] = await store.listSessions();
    return { session: session!, messages: await store.listMessages(session!.id), calls: await store.listToolCalls(session!.id) };
  } finally {
    await store.close();
  }
}

const TOOL_STARTED = /^▸ bash /m;
const CANCELLING = /^cancelling… \(Ctrl-C again to quit at once\)$/m;

describe.skipIf(!veilBuilt)("veil run: Ctrl-C", () => {
  it("cancels the turn, prints cancelled, exits 130, leaves the session idle with every tool call answered, and --continue goes on", async () => {
    llm.enqueue(reply().text("Starting the long job.").tool("bash", { command: "sleep 30; echo late > late.txt" }).stop());
    const result = await runWithCtrlC(["do the long job"], [(out) => out.stderrMatches(TOOL_STARTED)]);
    expect(result.presses).toBe(1);
    expect(result.code).toBe(130);
    expect(result.stdout).toBe("Starting the long job.\n");
    expect(result.stderr).toMatch(CANCELLING);
    expect(result.stderr).toMatch(/^✗ bash \(\d+ ms\) Error: CANCELLED — the run was cancelled before this tool call finished$/m);
    expect(result.stderr.endsWith("\ncancelled\n")).toBe(true);
    expect(existsSync(join(ws.root, "late.txt"))).toBe(false);

    const { session, messages, calls } = await storedSession();
    expect(session.status).toBe("idle");
    expect(calls).toMatchObject([{ name: "bash", state: "cancelled" }]);
    const assistant = messages.find((m) => m.role === "assistant" && m.tool_calls?.length);
    const answer = messages.find((m) => m.role === "tool");
    expect(answer?.tool_call_id).toBe(assistant!.tool_calls![0]!.id);
    expect(answer?.content).toMatch(/^Error: CANCELLED — /);

    llm.enqueue(reply().text("Picking up where we left off.").stop());
    const next = await spawnVeil(["run", "--continue", "go on"], { cwd: ws.root, env });
    expect(next).toMatchObject({ code: 0, stdout: "Picking up where we left off.\n" });
    const sent = llm.completionRequests.at(-1)!.body.messages as { role: string; tool_calls?: { id: string }[]; tool_call_id?: string; content: unknown }[];
    const callAt = sent.findIndex((m) => m.role === "assistant" && m.tool_calls?.length);
    expect(sent[callAt + 1]).toMatchObject({ role: "tool", tool_call_id: sent[callAt]!.tool_calls![0]!.id });
    expect(sent.at(-1)).toMatchObject({ role: "user", content: "go on" });
    expect((await storedSession()).session.status).toBe("idle");
  });

  it("a second Ctrl-C while the turn is being cancelled exits at once, still 130", async () => {
    // A PreToolUse hook that takes its time holds the cancel: the run waits for it to answer.
    mkdirSync(join(ws.root, ".veil"), { recursive: true });
    const pidFile = join(ws.root, "hook.pid");
    writeFileSync(join(ws.root, ".veil/settings.json"), JSON.stringify({ hooks: { PreToolUse: [{ hooks: [{ type: "command", command: `echo $$ > ${pidFile}; sleep 60`, timeout: 120 }] }] } }));
    llm.enqueue(reply().tool("bash", { command: "echo ran > ran.txt" }).stop());
    const result = await runWithCtrlC(["go"], [() => fileAppears(pidFile), (out) => out.stderrMatches(CANCELLING)]);
    if (existsSync(pidFile)) leftovers.push(Number(readFileSync(pidFile, "utf8")));
    expect(result.presses).toBe(2);
    expect(result.code).toBe(130);
    expect(result.stderr).toContain("cancelling… (Ctrl-C again to quit at once)\n");
    expect(result.stderr).not.toContain("\ncancelled\n");
    expect(existsSync(join(ws.root, "ran.txt"))).toBe(false);

    // Left as a kill would leave it; the next run still sends a valid history and settles the session.
    writeFileSync(join(ws.root, ".veil/settings.json"), "{}");
    llm.enqueue(reply().text("again").stop());
    expect(await spawnVeil(["run", "--continue", "go on"], { cwd: ws.root, env })).toMatchObject({ code: 0, stdout: "again\n" });
    const sent = llm.completionRequests.at(-1)!.body.messages as { role: string; tool_calls?: { id: string }[]; tool_call_id?: string }[];
    const callAt = sent.findIndex((m) => m.role === "assistant" && m.tool_calls?.length);
    expect(sent[callAt + 1]).toMatchObject({ role: "tool", tool_call_id: sent[callAt]!.tool_calls![0]!.id });
    expect((await storedSession()).session.status).toBe("idle");
  });
});

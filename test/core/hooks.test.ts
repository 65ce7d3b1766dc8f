import { chmodSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import type { VeilEventBody } from "../../src/base/events.js";
import { memoryLogger } from "../../src/base/log.js";
import type { HooksSettings } from "../../src/config/types.js";
import { HookRunner, MAX_STOP_CONTINUATIONS } from "../../src/core/hooks.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;
afterEach(() => ws?.cleanup());

function setup(hooks: HooksSettings, scripts: Record<string, string> = {}) {
  ws = tmpWorkspace();
  for (const [name, body] of Object.entries(scripts)) chmodSync(ws.write(name, `#!/bin/sh\n${body}\n`), 0o755);
  const events: { sessionId: string; event: VeilEventBody }[] = [];
  const log = memoryLogger();
  const runner = new HookRunner({ hooks, workspace: ws.root, clock: systemClock, log, emit: (sessionId, event) => events.push({ sessionId, event }) });
  return { runner, events, log };
}

const cmd = (command: string, timeout?: number) => ({ type: "command" as const, command, ...(timeout ? { timeout } : {}) });

describe("HookRunner", () => {
  it("gives PreToolUse hooks the event as JSON on stdin, runs them in the workspace, and lets exit 0 go on", async () => {
    const { runner, events } = setup({ PreToolUse: [{ matcher: "bash", hooks: [cmd("./record.sh")] }] }, { "record.sh": 'cat > input.json; pwd > cwd.txt; echo "$VEIL_PROJECT_DIR" > dir.txt' });
    const decision = await runner.preToolUse({ sessionId: "sess_1", toolName: "bash", toolInput: { command: "ls" } });
    expect(decision).toEqual({ blocked: false });
    expect(JSON.parse(readFileSync(ws.path("input.json"), "utf8"))).toEqual({ session_id: "sess_1", hook_event_name: "PreToolUse", cwd: ws.root, tool_name: "bash", tool_input: { command: "ls" } });
    expect(readFileSync(ws.path("cwd.txt"), "utf8").trim()).toBe(ws.root);
    expect(readFileSync(ws.path("dir.txt"), "utf8").trim()).toBe(ws.root);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ sessionId: "sess_1", event: { type: "hook.run", event: "PreToolUse", command: "./record.sh", exitCode: 0, blocked: false } });
    expect(typeof (events[0]!.event as { durationMs: number }).durationMs).toBe("number");
  });

  it("blocks on exit 2 with stderr as the reason", async () => {
    const { runner, events } = setup({ PreToolUse: [{ matcher: "bash|write_file", hooks: [cmd("./deny.sh")] }] }, { "deny.sh": 'echo "rm is not allowed here" >&2; exit 2' });
    expect(await runner.preToolUse({ sessionId: "s", toolName: "write_file", toolInput: {} })).toEqual({ blocked: true, reason: "rm is not allowed here" });
    expect(events[0]!.event).toMatchObject({ exitCode: 2, blocked: true });
  });

  it("blocks on stdout {decision: block} and on Claude Code's permissionDecision deny", async () => {
    const { runner } = setup({
      PreToolUse: [
        { matcher: "bash", hooks: [cmd(`echo '{"decision":"block","reason":"no shell today"}'`)] },
        { matcher: "read_file", hooks: [cmd(`echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"secret file"}}'`)] },
      ],
    });
    expect(await runner.preToolUse({ sessionId: "s", toolName: "bash", toolInput: {} })).toEqual({ blocked: true, reason: "no shell today" });
    expect(await runner.preToolUse({ sessionId: "s", toolName: "read_file", toolInput: {} })).toEqual({ blocked: true, reason: "secret file" });
  });

  it("matches the whole tool name by regular expression; empty and * match every tool", async () => {
    const { runner, events } = setup({
      PreToolUse: [
        { matcher: "bash", hooks: [cmd("exit 0")] },
        { matcher: "mcp__.*", hooks: [cmd("true")] },
        { matcher: "*", hooks: [cmd(":")] },
        { hooks: [cmd("echo")] },
      ],
    });
    await runner.preToolUse({ sessionId: "s", toolName: "bash_output", toolInput: {} });
    expect(events.map((e) => (e.event as { command: string }).command).sort()).toEqual([":", "echo"]);
    events.length = 0;
    await runner.preToolUse({ sessionId: "s", toolName: "mcp__everything__echo", toolInput: {} });
    expect(events.map((e) => (e.event as { command: string }).command).sort()).toEqual([":", "echo", "true"]);
  });

  it("treats other exit codes as non-blocking errors and logs them", async () => {
    const { runner, log } = setup({ PostToolUse: [{ hooks: [cmd("echo oops >&2; exit 1")] }] });
    expect(await runner.postToolUse({ sessionId: "s", toolName: "bash", toolInput: {}, toolResponse: "out" })).toEqual({ blocked: false });
    expect(log.entries.some((e) => e.level === "warn" && e.message.includes("exit code 1"))).toBe(true);
  });

  it("passes tool_response to PostToolUse and can block it with feedback", async () => {
    const { runner } = setup({ PostToolUse: [{ matcher: "write_file", hooks: [cmd("./post.sh")] }] }, { "post.sh": 'cat > post.json; echo "lint failed" >&2; exit 2' });
    expect(await runner.postToolUse({ sessionId: "s", toolName: "write_file", toolInput: { path: "a" }, toolResponse: { output: "ok" } })).toEqual({ blocked: true, reason: "lint failed" });
    expect(JSON.parse(readFileSync(ws.path("post.json"), "utf8"))).toMatchObject({ hook_event_name: "PostToolUse", tool_response: { output: "ok" } });
  });

  it("kills a hook past its timeout (process group included) and counts it as exit 0", async () => {
    const { runner, events } = setup({ PreToolUse: [{ hooks: [cmd("./slow.sh", 0.3)] }] }, { "slow.sh": "sleep 30 & echo $! > child.pid; sleep 30; exit 2" });
    const decision = await runner.preToolUse({ sessionId: "s", toolName: "bash", toolInput: {} });
    expect(decision).toEqual({ blocked: false });
    expect(events[0]!.event).toMatchObject({ type: "hook.run", exitCode: null, blocked: false, timedOut: true });
    const childPid = Number(readFileSync(ws.path("child.pid"), "utf8"));
    await expect.poll(() => alive(childPid)).toBe(false);
  });

  it("does not wait for a backgrounded child that keeps stdout open", async () => {
    const { runner, events } = setup({ PostToolUse: [{ hooks: [cmd("sleep 5 & exit 0", 10)] }] });
    await runner.postToolUse({ sessionId: "s", toolName: "bash", toolInput: {}, toolResponse: "" });
    expect(events[0]!.event).toMatchObject({ exitCode: 0, blocked: false });
    expect((events[0]!.event as { durationMs: number }).durationMs).toBeLessThan(5000);
  });

  it("UserPromptSubmit gets the prompt, can refuse it, and its plain stdout is context", async () => {
    const { runner } = setup({ UserPromptSubmit: [{ hooks: [cmd("./prompt.sh")] }] }, { "prompt.sh": 'input=$(cat); case "$input" in *password*) echo "prompt mentions a password" >&2; exit 2;; esac; echo "branch: main"' });
    expect(await runner.userPromptSubmit({ sessionId: "s", prompt: "my password is x" })).toEqual({ blocked: true, reason: "prompt mentions a password" });
    expect(await runner.userPromptSubmit({ sessionId: "s", prompt: "hello" })).toEqual({ blocked: false, context: "branch: main" });
  });

  it("Stop continues the run with stderr, sets stop_hook_active, and stops after 3 continuations in a row", async () => {
    const { runner } = setup({ Stop: [{ hooks: [cmd("./stop.sh")] }] }, { "stop.sh": 'cat >> stops.jsonl; echo >> stops.jsonl; echo "tests still fail; fix them" >&2; exit 2' });
    const answers = [];
    for (let i = 0; i <= MAX_STOP_CONTINUATIONS; i++) answers.push(await runner.stop({ sessionId: "s" }));
    expect(answers.slice(0, MAX_STOP_CONTINUATIONS)).toEqual(Array(MAX_STOP_CONTINUATIONS).fill({ continueWith: "tests still fail; fix them" }));
    expect(answers[MAX_STOP_CONTINUATIONS]).toEqual({});
    const inputs = readFileSync(ws.path("stops.jsonl"), "utf8").trim().split(/\n+/).map((line) => JSON.parse(line) as { stop_hook_active: boolean; hook_event_name: string });
    expect(inputs.map((i) => i.stop_hook_active)).toEqual([false, true, true, true]);
    expect(inputs[0]!.hook_event_name).toBe("Stop");
    // A new prompt starts a fresh count.
    expect(await runner.stop({ sessionId: "s" })).toEqual({ continueWith: "tests still fail; fix them" });
    await runner.userPromptSubmit({ sessionId: "s", prompt: "next" });
    expect(await runner.stop({ sessionId: "s" })).toEqual({ continueWith: "tests still fail; fix them" });
  });

  it("SessionStart passes the source and returns stdout as context", async () => {
    const { runner } = setup({ SessionStart: [{ hooks: [cmd(`cat > start.json; echo '{"hookSpecificOutput":{"additionalContext":"repo uses pnpm"}}'`)] }] });
    expect(await runner.sessionStart({ sessionId: "s", source: "startup" })).toEqual({ context: "repo uses pnpm" });
    expect(JSON.parse(readFileSync(ws.path("start.json"), "utf8"))).toMatchObject({ hook_event_name: "SessionStart", source: "startup", session_id: "s" });
  });

  it("runs nothing and answers at once when no hook is configured", async () => {
    const { runner, events } = setup({});
    expect(runner.has("PreToolUse")).toBe(false);
    expect(await runner.preToolUse({ sessionId: "s", toolName: "bash", toolInput: {} })).toEqual({ blocked: false });
    expect(await runner.stop({ sessionId: "s" })).toEqual({});
    expect(events).toEqual([]);
  });

  it("refuses an invalid matcher with CONFIG_ERROR naming it", () => {
    expect(() => setup({ PreToolUse: [{ matcher: "bash(", hooks: [cmd("true")] }] })).toThrow(/hooks\.PreToolUse: matcher "bash\(" is not a valid regular expression/);
  });

  it("a hook command that does not exist is a non-blocking failure", async () => {
    const { runner, events } = setup({ PreToolUse: [{ hooks: [cmd("./missing.sh")] }] });
    expect(await runner.preToolUse({ sessionId: "s", toolName: "bash", toolInput: {} })).toEqual({ blocked: false });
    expect(events[0]!.event).toMatchObject({ exitCode: 127, blocked: false });
  });
});

/** Running (a zombie left for an init that does not reap counts as gone). */
function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z";
  } catch {
    return false;
  }
}

describe("settings.hooks", () => {
  it("loads Claude Code's shape and refuses a malformed entry with CONFIG_ERROR naming the file", async () => {
    const { loadConfig } = await import("../../src/config/load.js");
    ws = tmpWorkspace();
    const hooks = { PreToolUse: [{ matcher: "bash|write_file", hooks: [{ type: "command", command: "./check.sh", timeout: 30 }] }], Stop: [{ hooks: [{ type: "command", command: "true" }] }] };
    ws.write(".veil/settings.json", JSON.stringify({ hooks }));
    expect(loadConfig({ workspace: ws.root, env: { VEIL_HOME: ws.path("home") } }).settings.hooks).toEqual(hooks);
    ws.write(".veil/settings.json", JSON.stringify({ hooks: { PreToolUse: [{ matcher: "bash", hooks: [{ type: "prompt", command: "x" }] }] } }));
    expect(() => loadConfig({ workspace: ws.root, env: { VEIL_HOME: ws.path("home") } })).toThrow(/settings\.json.*hooks/);
    ws.write(".veil/settings.json", JSON.stringify({ hooks: { PreToolCall: [] } }));
    expect(() => loadConfig({ workspace: ws.root, env: { VEIL_HOME: ws.path("home") } })).toThrow(/PreToolCall/);
  });
});

import { existsSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { reply } from "../helpers/fake-llm.js";
import { compileOutputSchema } from "../../src/engines/output-schema.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

const cmd = (command: string, timeout?: number) => ({ type: "command", command, ...(timeout ? { timeout } : {}) });

/** A harness whose hooks are real shell scripts under .veil/hooks, run with `sh`. */
async function withHooks(hooks: Record<string, unknown>, scripts: Record<string, string>) {
  const files: Record<string, string> = {};
  for (const [name, body] of Object.entries(scripts)) files[`.veil/hooks/${name}`] = `${body}\n`;
  h = await createRuntimeHarness({ files, settings: { hooks } });
  return h;
}

async function hookRuns(sessionId: string) {
  const stored = await h.runtime.store.listEvents(sessionId);
  return stored.filter((e) => e.type === "hook.run").map((e) => JSON.parse(e.data) as { event: string; blocked: boolean; exitCode: number | null; timedOut?: boolean; command: string; durationMs: number });
}

const lastUser = (body: { messages: { role: string; content: unknown }[] }) => [...body.messages].reverse().find((m) => m.role === "user")!.content;
const toolMessage = (body: { messages: { role: string; content: unknown }[] }) => body.messages.find((m) => m.role === "tool")!.content;

describe("hooks in the runtime", () => {
  it("PreToolUse exit 2: the tool does not run and the model sees exactly the hook's stderr", async () => {
    await withHooks({ PreToolUse: [{ matcher: "write_file", hooks: [cmd("sh .veil/hooks/deny.sh")] }] }, { "deny.sh": 'cat > .veil/pre-input.json\necho "writes are frozen until Friday" >&2\nexit 2' });
    h.llm.enqueue(reply().tool("write_file", { file: "out.txt", content: "x" }).stop());
    h.llm.enqueue(reply().text("understood").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const result = await (await h.runtime.sessions.send(session.id, "write it")).result;
    expect(result.content).toBe("understood");
    expect(existsSync(h.ws.path("out.txt"))).toBe(false);
    expect(toolMessage(h.llm.completionRequests[1]!.body)).toBe("writes are frozen until Friday");
    const [call] = await h.runtime.store.listToolCalls(session.id);
    expect(call).toMatchObject({ name: "write_file", state: "error" });
    const input = JSON.parse(readFileSync(h.ws.path(".veil/pre-input.json"), "utf8"));
    expect(input).toMatchObject({ session_id: session.id, hook_event_name: "PreToolUse", tool_name: "write_file", tool_input: { file: "out.txt", content: "x" } });
    expect(await hookRuns(session.id)).toMatchObject([{ event: "PreToolUse", exitCode: 2, blocked: true, command: "sh .veil/hooks/deny.sh" }]);
  });

  it("PreToolUse that does not match or exits 0 lets the tool run", async () => {
    await withHooks({ PreToolUse: [{ matcher: "bash", hooks: [cmd("exit 0")] }, { matcher: "glob", hooks: [cmd("exit 2")] }] }, {});
    h.llm.enqueue(reply().tool("bash", { command: "echo made > made.txt" }).stop());
    h.llm.enqueue(reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "go")).result;
    expect(readFileSync(h.ws.path("made.txt"), "utf8")).toBe("made\n");
    expect(await hookRuns(session.id)).toMatchObject([{ event: "PreToolUse", exitCode: 0, blocked: false }]);
  });

  it("PostToolUse exit 2: the tool ran and the reason is appended to its output as a system reminder", async () => {
    await withHooks({ PostToolUse: [{ matcher: "bash", hooks: [cmd("sh .veil/hooks/audit.sh")] }] }, { "audit.sh": 'cat > .veil/post-input.json\necho "audit: do not leave temp files" >&2\nexit 2' });
    h.llm.enqueue(reply().tool("bash", { command: "echo hello; echo x > t.txt" }).stop());
    h.llm.enqueue(reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "go")).result;
    expect(readFileSync(h.ws.path("t.txt"), "utf8")).toBe("x\n");
    const seen = String(toolMessage(h.llm.completionRequests[1]!.body));
    expect(seen).toContain("hello");
    expect(seen.endsWith("<system-reminder>PostToolUse hook: audit: do not leave temp files</system-reminder>")).toBe(true);
    const input = JSON.parse(readFileSync(h.ws.path(".veil/post-input.json"), "utf8"));
    expect(input).toMatchObject({ hook_event_name: "PostToolUse", tool_name: "bash", tool_response: { is_error: false } });
    expect(input.tool_response.output).toContain("hello");
    expect(await hookRuns(session.id)).toMatchObject([{ event: "PostToolUse", blocked: true }]);
  });

  it("UserPromptSubmit over HTTP: a block is 400 HOOK_BLOCKED and stores nothing; plain stdout is context the model sees", async () => {
    await withHooks(
      { UserPromptSubmit: [{ hooks: [cmd("sh .veil/hooks/prompt.sh")] }] },
      { "prompt.sh": 'input=$(cat)\ncase "$input" in *password*) echo "no passwords in prompts" >&2; exit 2;; esac\necho "the user is on the night shift"' },
    );
    const server = await h.serve();
    const created = (await (await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "default" }) })).json()) as { id: string };
    const refused = await server.fetch(`/sessions/${created.id}/chat`, { method: "POST", body: JSON.stringify({ message: "my password is hunter2" }) });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toEqual({ code: "HOOK_BLOCKED", message: "no passwords in prompts" });
    expect(await h.runtime.store.listMessages(created.id)).toEqual([]);
    expect(await h.runtime.store.listInbox(created.id)).toEqual([]);
    expect(h.llm.completionRequests).toHaveLength(0);

    h.llm.enqueue(reply().text("good evening").stop());
    const ok = await server.fetch(`/sessions/${created.id}/chat`, { method: "POST", body: JSON.stringify({ message: "hello" }) });
    expect(ok.status).toBe(200);
    expect(lastUser(h.llm.completionRequests[0]!.body)).toBe("hello\n\n<system-reminder>UserPromptSubmit hook context:\nthe user is on the night shift</system-reminder>");

    const events = (await (await server.fetch(`/sessions/${created.id}/events?follow=false`)).json()) as { type: string; event?: string; blocked?: boolean }[];
    expect(events.filter((e) => e.type === "hook.run").map((e) => [e.event, e.blocked])).toEqual([
      ["UserPromptSubmit", true],
      ["UserPromptSubmit", false],
    ]);

    // Messages the runtime sends itself (no user source) are not screened.
    h.llm.enqueue(reply().text("fine").stop());
    const internal = await (await h.runtime.sessions.send(created.id, "password rotation reminder", { meta: { source: "wakeup" } })).result;
    expect(internal.content).toBe("fine");
  });

  it("UserPromptSubmit on the OpenAI-wire agent/<name> route: a block is 400 HOOK_BLOCKED, context reaches the model", async () => {
    await withHooks(
      { UserPromptSubmit: [{ hooks: [cmd("sh .veil/hooks/prompt.sh")] }] },
      { "prompt.sh": 'input=$(cat)\ncase "$input" in *password*) echo "no passwords in prompts" >&2; exit 2;; esac\necho "the user is on the night shift"' },
    );
    const server = await h.serve();
    const completions = (content: string) =>
      server.fetch("/v1/chat/completions", { method: "POST", body: JSON.stringify({ model: "agent/default", messages: [{ role: "user", content }] }) });
    const refused = await completions("my password is hunter2");
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "HOOK_BLOCKED", message: "no passwords in prompts" });
    expect(h.llm.completionRequests).toHaveLength(0);
    h.llm.enqueue(reply().text("good evening").stop());
    const ok = await completions("hello");
    expect(ok.status).toBe(200);
    expect(lastUser(h.llm.completionRequests[0]!.body)).toBe("hello\n\n<system-reminder>UserPromptSubmit hook context:\nthe user is on the night shift</system-reminder>");
  });

  it("Stop exit 2 continues the same run once with the reason as a user message, then the run ends", async () => {
    await withHooks(
      { Stop: [{ hooks: [cmd("sh .veil/hooks/stop.sh")] }] },
      { "stop.sh": 'input=$(cat)\ncase "$input" in *\'"stop_hook_active":false\'*) echo "run the tests before you finish" >&2; exit 2;; esac\nexit 0' },
    );
    h.llm.enqueue(reply().text("done").stop());
    h.llm.enqueue(reply().text("tests pass, done").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const result = await (await h.runtime.sessions.send(session.id, "fix it")).result;
    expect(result.content).toBe("tests pass, done");
    expect(result.iterations).toBe(2);
    expect(h.llm.completionRequests).toHaveLength(2);
    expect(lastUser(h.llm.completionRequests[1]!.body)).toBe("run the tests before you finish");
    expect(h.events.filter((e) => e.sessionId === session.id && e.type === "chat.done")).toHaveLength(1);
    expect((await hookRuns(session.id)).map((r) => [r.event, r.blocked])).toEqual([
      ["Stop", true],
      ["Stop", false],
    ]);
    const rows = await h.runtime.store.listMessages(session.id);
    expect(rows.map((r) => [r.role, r.content])).toEqual([
      ["user", "fix it"],
      ["assistant", "done"],
      ["user", "run the tests before you finish"],
      ["assistant", "tests pass, done"],
    ]);
    expect(rows[2]!.meta).toEqual({ source: "hook", hook: "Stop" });
  });

  it("Stop exit 2 under an output schema: the continued run's final answer is the one validated (and repaired) and returned as structured", async () => {
    await withHooks(
      { Stop: [{ hooks: [cmd("sh .veil/hooks/stop.sh")] }] },
      { "stop.sh": 'input=$(cat)\ncase "$input" in *\'"stop_hook_active":false\'*) echo "count again" >&2; exit 2;; esac\nexit 0' },
    );
    const outputSchema = compileOutputSchema({ type: "object", properties: { count: { type: "integer" } }, required: ["count"], additionalProperties: false }, "output_schema");
    // The first answer matches; the hook sends the run on; the next answer does not match and is repaired.
    h.llm.enqueue(reply().text('{"count":1}').stop(), reply().text("about two").stop(), reply().text('{"count":2}').stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const result = await (await h.runtime.sessions.send(session.id, "count", { outputSchema })).result;
    expect(result.structured).toEqual({ count: 2 });
    expect(result.content).toBe('{"count":2}');
    expect(h.llm.completionRequests).toHaveLength(3);
    expect(lastUser(h.llm.completionRequests[1]!.body)).toBe("count again");
    expect(JSON.stringify(lastUser(h.llm.completionRequests[2]!.body))).toMatch(/schema|JSON/i);
    expect(h.events.filter((e) => e.sessionId === session.id && e.type === "chat.done")).toHaveLength(1);
  });

  it("SessionStart stdout is context the model sees, at creation and again on resume", async () => {
    await withHooks({ SessionStart: [{ hooks: [cmd("sh .veil/hooks/start.sh")] }] }, { "start.sh": 'echo "branch: feature/x; source: $(cat | sed -e \'s/.*"source":"\\([a-z]*\\)".*/\\1/\')"' });
    const session = await h.runtime.sessions.create({ agent: "default" });
    h.llm.enqueue(reply().text("hi").stop());
    await (await h.runtime.sessions.send(session.id, "hello")).result;
    const first = h.llm.completionRequests[0]!.body.messages.filter((m: { role: string }) => m.role === "user").map((m: { content: string }) => m.content);
    expect(first).toEqual(["<system-reminder>SessionStart hook context (startup):\nbranch: feature/x; source: startup</system-reminder>", "hello"]);

    await h.runtime.sessions.suspend(session.id);
    await h.runtime.sessions.resume(session.id);
    h.llm.enqueue(reply().text("back").stop());
    await (await h.runtime.sessions.send(session.id, "again")).result;
    const second = h.llm.completionRequests[1]!.body.messages.filter((m: { role: string }) => m.role === "user").map((m: { content: string }) => m.content);
    expect(second.at(-2)).toBe("<system-reminder>SessionStart hook context (resume):\nbranch: feature/x; source: resume</system-reminder>");
    expect((await hookRuns(session.id)).map((r) => r.event)).toEqual(["SessionStart", "SessionStart"]);
  });

  it("a hook past its timeout is killed, does not block, and the tool runs", async () => {
    await withHooks({ PreToolUse: [{ matcher: "bash", hooks: [cmd("sh .veil/hooks/slow.sh", 0.3)] }] }, { "slow.sh": 'sleep 30\necho "too late" >&2\nexit 2' });
    h.llm.enqueue(reply().tool("bash", { command: "echo ran > ran.txt" }).stop());
    h.llm.enqueue(reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "go")).result;
    expect(readFileSync(h.ws.path("ran.txt"), "utf8")).toBe("ran\n");
    expect(await hookRuns(session.id)).toMatchObject([{ event: "PreToolUse", exitCode: null, timedOut: true, blocked: false }]);
  });
});

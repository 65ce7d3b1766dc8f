import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import { memoryLogger } from "../../src/base/log.js";
import { settingsHooksReader } from "../../src/config/hooks-file.js";
import { resolvePaths } from "../../src/config/load.js";
import type { HooksSettings } from "../../src/config/types.js";
import { HookRunner } from "../../src/core/hooks.js";
import { reply, type FakeRequest } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let h: RuntimeHarness | undefined;
let ws: TempWorkspace | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  ws?.cleanup();
  ws = undefined;
});

/** Blocks any bash command that mentions `rm `; everything else goes on. */
const NO_RM = { PreToolUse: [{ matcher: "bash", hooks: [{ type: "command", command: "grep -q '\"rm ' && { echo 'rm is not allowed here' >&2; exit 2; }; exit 0" }] }] };

type Body = { messages: { role: string; content: unknown }[] };
const toolResults = (request: FakeRequest) => (request.body as Body).messages.filter((m) => m.role === "tool").map((m) => String(m.content));

describe("hooks added, removed or broken while the server runs", () => {
  it("take effect from the next call: an added PreToolUse hook blocks, a removed one no longer does, an invalid entry fails the next call and refuses prompts until fixed", async () => {
    h = await createRuntimeHarness({ files: { "victim.txt": "keep me\n" } });
    const settingsFile = h.ws.path(".veil/settings.json");
    const base = { retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 5 } };
    const writeSettings = (settings: object) => writeFileSync(settingsFile, JSON.stringify({ ...base, ...settings }));
    const server = await h.serve();
    const session = (await (await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "default" }) })).json()) as { id: string };
    const chat = (message: string) => server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message }) });
    const rmTurn = () => h!.llm.enqueue(reply().tool("bash", { command: "rm victim.txt" }).stop(), reply().text("done").stop());

    // Started without hooks; one is added to settings.json: the next call is blocked, no restart.
    writeSettings({ hooks: NO_RM });
    rmTurn();
    expect((await chat("delete it")).status).toBe(200);
    expect(existsSync(h.ws.path("victim.txt"))).toBe(true);
    expect(toolResults(h.llm.completionRequests.at(-1)!)).toEqual(["rm is not allowed here"]);
    expect(h.log.entries.find((e) => e.message === "settings hooks changed; these are in force now")?.fields).toEqual({ hooks: { PreToolUse: 1 } });

    // The hook is removed: the same call runs.
    writeSettings({});
    rmTurn();
    expect((await chat("delete it now")).status).toBe(200);
    expect(existsSync(h.ws.path("victim.txt"))).toBe(false);

    // An invalid entry lands while a turn runs: the turn's next call fails naming the file, nothing runs.
    let requests = 0;
    h.llm.respond(() => {
      requests += 1;
      if (requests === 1) return reply().tool("bash", { command: "echo a > a.txt" }).stop();
      if (requests === 2) {
        writeSettings({ hooks: { PreToolUse: [{ matcher: "bash", hooks: [{ type: "command" }] }] } });
        return reply().tool("bash", { command: "echo b > b.txt" }).stop();
      }
      return reply().text("noted").stop();
    });
    expect((await chat("write two files")).status).toBe(200);
    h.llm.respond(null);
    expect(existsSync(h.ws.path("a.txt"))).toBe(true);
    expect(existsSync(h.ws.path("b.txt"))).toBe(false);
    const failed = toolResults(h.llm.completionRequests.at(-1)!).at(-1);
    expect(failed).toBe(
      `Error: CONFIG_ERROR — ${settingsFile}: missing required field "command". The hooks in force cannot be read, so this call did not run; no tool runs until the settings are fixed`,
    );
    const [call] = (await h.runtime.store.listToolCalls(session.id)).filter((c) => c.arguments.includes("b.txt"));
    expect(call).toMatchObject({ state: "error" });
    expect(h.log.entries.filter((e) => e.level === "error").map((e) => e.message)).toEqual([
      `hooks cannot be read, so every tool call fails and user prompts are refused until the settings are fixed: ${settingsFile}: missing required field "command".`,
    ]);

    // While broken, a prompt is refused (nothing stored), so no turn runs blind.
    const before = (await h.runtime.store.listMessages(session.id)).length;
    const refused = await chat("try again");
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toEqual({ code: "CONFIG_ERROR", message: `${settingsFile}: missing required field "command".` });
    expect(await h.runtime.store.listMessages(session.id)).toHaveLength(before);

    // Fixed: the guard is back in force at once.
    writeSettings({ hooks: NO_RM });
    writeFileSync(h.ws.path("second.txt"), "x");
    h.llm.enqueue(reply().tool("bash", { command: "rm second.txt" }).stop(), reply().text("ok").stop());
    expect((await chat("delete the other")).status).toBe(200);
    expect(existsSync(h.ws.path("second.txt"))).toBe(true);
  });
});

describe("settingsHooksReader", () => {
  it("answers the loaded hooks until a settings file changes, then the files' hooks (project over $VEIL_HOME); a deleted file's hooks are gone; bad JSON throws CONFIG_ERROR", () => {
    ws = tmpWorkspace();
    mkdirSync(ws.path(".veil"));
    mkdirSync(ws.path("home"));
    const paths = resolvePaths(ws.root, { VEIL_HOME: ws.path("home") });
    const loaded = { Stop: [] };
    const read = settingsHooksReader(paths, loaded);
    expect(read()).toBe(loaded);
    expect(read()).toBe(loaded);

    const home = { PreToolUse: [{ matcher: "bash", hooks: [{ type: "command", command: "home" }] }], Stop: [{ hooks: [{ type: "command", command: "home stop" }] }] };
    const project = { PreToolUse: [{ matcher: "write_file", hooks: [{ type: "command", command: "project" }] }] };
    writeFileSync(join(paths.homeDir, "settings.json"), JSON.stringify({ hooks: home }));
    writeFileSync(join(paths.projectDir, "settings.json"), JSON.stringify({ defaultModel: "m", hooks: project }));
    const merged = read();
    expect(merged).toEqual({ PreToolUse: project.PreToolUse, Stop: home.Stop });
    // Unchanged files: the same object, nothing read again.
    expect(read()).toBe(merged);

    rmSync(join(paths.projectDir, "settings.json"));
    expect(read()).toEqual(home);

    writeFileSync(join(paths.homeDir, "settings.json"), "{ not json");
    expect(() => read()).toThrow(/^.*home\/settings\.json: invalid JSON \(.*\)$/);
    expect(() => read()).toThrow(expect.objectContaining({ code: "CONFIG_ERROR" }));
    writeFileSync(join(paths.homeDir, "settings.json"), JSON.stringify({ hooks: { PreToolUse: [{ matcher: "(", hooks: [] }] } }));
    expect(read()).toEqual({ PreToolUse: [{ matcher: "(", hooks: [] }] });
  });
});

describe("HookRunner with a reload", () => {
  it("an invalid matcher that arrives later fails tool calls and refuses prompts; Stop and SessionStart go on; a good set is taken up again", async () => {
    ws = tmpWorkspace();
    const log = memoryLogger();
    let hooks: HooksSettings | undefined;
    const runner = new HookRunner({ hooks: undefined, reload: () => hooks, workspace: ws.root, clock: systemClock, log, emit: () => {} });
    expect(runner.has("PreToolUse")).toBe(false);

    hooks = { PreToolUse: [{ matcher: "(bash", hooks: [{ type: "command", command: "exit 0" }] }] };
    expect(runner.has("Stop")).toBe(true);
    const blocked = await runner.preToolUse({ sessionId: "s", toolName: "bash", toolInput: {} });
    expect(blocked).toMatchObject({ blocked: true, reason: expect.stringMatching(/^Error: CONFIG_ERROR — settings\.json hooks\.PreToolUse: matcher "\(bash" is not a valid regular expression .*this call did not run/) });
    expect(await runner.postToolUse({ sessionId: "s", toolName: "bash", toolInput: {}, toolResponse: {} })).toMatchObject({ blocked: true, reason: expect.stringContaining("this call's result was not checked") });
    await expect(runner.userPromptSubmit({ sessionId: "s", prompt: "hi" })).rejects.toMatchObject({ code: "CONFIG_ERROR" });
    expect(await runner.stop({ sessionId: "s" })).toEqual({});
    expect(await runner.sessionStart({ sessionId: "s" })).toEqual({});
    // Logged loudly once, not once per call.
    expect(log.entries.filter((e) => e.level === "error")).toHaveLength(1);

    hooks = { PreToolUse: [{ matcher: "bash", hooks: [{ type: "command", command: "echo no >&2; exit 2" }] }] };
    expect(await runner.preToolUse({ sessionId: "s", toolName: "bash", toolInput: {} })).toEqual({ blocked: true, reason: "no" });
    expect(await runner.preToolUse({ sessionId: "s", toolName: "glob", toolInput: {} })).toEqual({ blocked: false });
    expect(runner.has("Stop")).toBe(false);
  });
});

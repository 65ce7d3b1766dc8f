import { afterEach, describe, expect, it } from "vitest";
import { agentControl } from "../../../src/core/agents/tools/agent-control.js";
import { agentMessage } from "../../../src/core/agents/tools/agent-message.js";
import { agentSpawn } from "../../../src/core/agents/tools/agent-spawn.js";
import { SUMMARIZER_SYSTEM_PROMPT } from "../../../src/core/agents/summarizer.js";
import { allBuiltinTools as builtinTools } from "../../../src/core/builtins.js";
import { isToolAllowed } from "../../../src/tools/permissions.js";
import { defaultMode } from "../../../src/config/defaults.js";
import { reply } from "../../helpers/fake-llm.js";
import { createAgentsHarness, deferred, systemPrompt, tag, type AgentsHarness } from "../../core/agents/harness.js";

let h: AgentsHarness;
afterEach(async () => {
  await h?.close();
});

async function spawnWorker(parent: string, name: string, objective: string): Promise<string> {
  return tag((await h.call(agentSpawn, parent, { agent: "worker", instance_name: name, objective })).output, "session-id")!;
}

const control = (caller: string, sessionId: string, action: string, params?: Record<string, unknown>) =>
  h.call(agentControl, caller, { sessionId, action, ...(params ? { params } : {}) });

describe("agent_control", () => {
  it("is registered, and paired with agent_spawn by the permission rules", () => {
    expect(builtinTools().map((t) => t.name)).toEqual(expect.arrayContaining(["agent_spawn", "agent_message", "agent_control"]));
    expect(isToolAllowed({ ...defaultMode(), tools: ["agent_spawn"] }, "agent_control")).toBe(true);
  });

  it("get-state counts messages and tool results since the caller's last agent_message (spawn baseline first)", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const w = await spawnWorker(a, "researcher_1", "OBJ-count");
    expect((await control(a, w, "get-state")).output).toBe(
      `<is-idle>true</is-idle>\n<number-of-messages>0</number-of-messages>\n<number-of-tools>0</number-of-tools>\n<instance-name>researcher_1</instance-name>\n<session-id>${w}</session-id>`,
    );
    h.worker("OBJ-count").enqueue(
      reply().tool("log_write", { message: "1" }).tool("log_write", { message: "2" }).stop(),
      reply().text("done one").stop(),
      reply().text("done two").stop(),
    );
    await h.call(agentMessage, a, { sessionId: w, message: "first" });
    const state = (await control(a, w, "get-state")).output;
    expect(tag(state, "number-of-messages")).toBe("2");
    expect(tag(state, "number-of-tools")).toBe("2");
    await h.call(agentMessage, a, { sessionId: w, message: "second" });
    const after = (await control(a, w, "get-state")).output;
    expect(tag(after, "number-of-messages")).toBe("1");
    expect(tag(after, "number-of-tools")).toBe("0");
  });

  it("acts only on the caller's descendants", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const stranger = await h.bossSession();
    const child = await spawnWorker(a, "c", "OBJ-c");
    const grandchild = await spawnWorker(child, "g", "OBJ-g");
    expect((await control(a, grandchild, "get-state")).success).toBe(true);
    expect((await control(stranger, child, "get-state")).output).toMatch(/^Error: PERMISSION_DENIED — session .* is not a sub-agent of this session/);
    expect((await control(child, a, "stop")).output).toMatch(/^Error: PERMISSION_DENIED/);
    expect((await control(a, a, "get-state")).output).toMatch(/^Error: VALIDATION_ERROR/);
    expect((await control(a, "sess_missing", "get-state")).output).toMatch(/^Error: SESSION_NOT_FOUND/);
  });

  it("stop cancels a sub-agent mid-tool, answers dangling tool calls, returns the get-state shape, and is idempotent", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const w = await spawnWorker(a, "sleeper", "OBJ-stop");
    h.worker("OBJ-stop").enqueue(reply().tool("sleep", { seconds: 200 }).tool("log_write", { message: "quick" }).stop());
    const started = new Promise<void>((resolve) => {
      const off = h.runtime.bus.subscribe({ sessionId: w, types: ["tool.start"] }, (e) => {
        if ((e as { toolName: string }).toolName === "sleep") (off(), resolve());
      });
    });
    const toA = h.nextUserMessage(a);
    await h.call(agentMessage, a, { sessionId: w, message: "sleep a while", async_inform: true });
    await started;
    const stopped = await control(a, w, "stop");
    expect(tag(stopped.output, "is-idle")).toBe("true");
    expect(tag(stopped.output, "session-id")).toBe(w);
    expect(tag(stopped.output, "number-of-tools")).toBe("2");
    const messages = await h.messages(w);
    const call = messages.find((m) => m.role === "assistant")!.tool_calls![0]!;
    expect(messages.find((m) => m.tool_call_id === call.id)?.content).toMatch(/^Error: CANCELLED —/);
    const again = await control(a, w, "stop");
    expect(again.success).toBe(true);
    expect(again.output).toBe(stopped.output);
    expect(await toA).toMatch(new RegExp(`^\\[Message from worker \\(session: ${w}\\)\\]: \\(no text reply — the run ended with stop reason "cancelled"\\)`));
  });

  it("update-session: budget_override applies to the running loop at once, reasoning on the next turn", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const w = await spawnWorker(a, "w", "OBJ-update");
    const gate = deferred();
    h.worker("OBJ-update").enqueue(reply().waitFor(gate.promise).tool("log_write", { message: "loop" }).stop(), reply().text("next turn").stop());
    const run = await h.runtime.sessions.send(w, "work");
    await h.llm.waitForRequests(1);
    const updated = await control(a, w, "update-session", { budget_override: { max_iterations: 1, max_tokens: 999999 }, reasoning: { effort: "low" } });
    expect(updated.output).toBe(
      `<session-id>${w}</session-id>\n<instance-name>w</instance-name>\n<applied>reasoning, budget_override.max_iterations, budget_override.max_tokens</applied>\n<applied_immediately>max_iterations, max_tokens</applied_immediately>\n<applied_next_turn>reasoning</applied_next_turn>`,
    );
    gate.resolve();
    expect((await run.result).stopReason).toBe("max_iterations");
    expect(h.llm.completionRequests).toHaveLength(1);
    expect(h.llm.completionRequests[0]!.body.reasoning_effort).toBeUndefined();

    await control(a, w, "update-session", { budget_override: { max_iterations: null } });
    expect((await h.runtime.store.getSession(w))?.budget_override).toEqual({ max_tokens: 999999 });
    expect((await (await h.runtime.sessions.send(w, "again")).result).content).toBe("next turn");
    expect(h.llm.completionRequests[1]!.body.reasoning_effort).toBe("low");
    expect((await control(a, w, "update-session", { model: "x" })).output).toMatch(/^Error: VALIDATION_ERROR — update-session accepts/);
    expect((await control(a, w, "update-session", {})).output).toMatch(/^Error: VALIDATION_ERROR — update-session needs/);
  });

  it("get-summary calls the summarizer model and honours the per-minute cap", async () => {
    h = await createAgentsHarness({ settings: { summarizerModel: "summ-model", summarizerMaxCallsPerMinute: 1 } });
    const summaries = h.router.route((req) => systemPrompt(req) === SUMMARIZER_SYSTEM_PROMPT);
    summaries.enqueue(reply().text("It read the files and is now writing the report.").stop());
    const a = await h.bossSession();
    const w = await spawnWorker(a, "w", "OBJ-summary");
    h.worker("OBJ-summary").enqueue(reply().text("I am reading files").stop());
    await h.call(agentMessage, a, { sessionId: w, message: "read the files" });
    const first = await control(a, w, "get-summary");
    expect(tag(first.output, "summary")).toBe("It read the files and is now writing the report.");
    expect(tag(first.output, "is-idle")).toBe("true");
    const request = h.llm.completionRequests.at(-1)!;
    expect(request.body.model).toBe("summ-model");
    expect(JSON.stringify(request.body.messages)).toContain("I am reading files");
    const before = h.llm.completionRequests.length;
    const second = await control(a, w, "get-summary");
    expect(tag(second.output, "rate-limited")).toBe("true");
    const retry = Number(tag(second.output, "retry-after-ms"));
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(60_000);
    expect(tag(second.output, "session-id")).toBe(w);
    expect(tag(second.output, "summary")).toBeUndefined();
    expect(h.llm.completionRequests.length).toBe(before);
  });

  it("get-last-message returns the last assistant text, or the last turn's full steps", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const w = await spawnWorker(a, "w", "OBJ-last");
    expect(tag((await control(a, w, "get-last-message")).output, "content")).toBe("(no assistant message yet)");
    h.worker("OBJ-last").enqueue(reply().text("checking").tool("log_write", { message: "z" }).stop(), reply().text("the end").stop());
    await h.call(agentMessage, a, { sessionId: w, message: "go" });
    expect(tag((await control(a, w, "get-last-message")).output, "content")).toBe("the end");
    const full = await control(a, w, "get-last-message", { full_steps: true });
    expect(tag(full.output, "content")).toBe('[assistant] checking\n[tool_call] log_write {"message":"z"}\n[assistant] the end');
  });
});

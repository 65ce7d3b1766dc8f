import { afterEach, describe, expect, it } from "vitest";
import { agentSpawn } from "../../../src/core/agents/tools/agent-spawn.js";
import { reply } from "../../helpers/fake-llm.js";
import { createAgentsHarness, lastMessage, systemPrompt, tag, type AgentsHarness } from "../../core/agents/harness.js";

let h: AgentsHarness;
afterEach(async () => {
  await h?.close();
});

describe("agent_spawn", () => {
  it("without initial_message creates the child session and makes no model call", async () => {
    h = await createAgentsHarness();
    const parent = await h.bossSession();
    const result = await h.call(agentSpawn, parent, { agent: "worker", instance_name: "w1", objective: "OBJ-quiet", success_criteria: "be done" });
    expect(result.success).toBe(true);
    const sid = tag(result.output, "session-id")!;
    expect(result.output).toBe(`<instance-name>w1</instance-name>\n<session-id>${sid}</session-id>`);
    const child = await h.runtime.store.getSession(sid);
    expect(child).toMatchObject({ agent: "worker", parent_session_id: parent, spawn_depth: 1, instance_name: "w1", objective: "OBJ-quiet", success_criteria: "be done", status: "idle" });
    expect(await h.messages(sid)).toEqual([]);
    expect(h.llm.completionRequests).toHaveLength(0);
  });

  it("sync: the seed is wrapped with the caller's agent and session, objective lands in the system prompt, the reply comes back", async () => {
    h = await createAgentsHarness();
    h.worker("OBJ-sync").enqueue(reply().text("worker says hi").stop());
    const parent = await h.bossSession();
    const result = await h.call(agentSpawn, parent, {
      agent: "worker",
      instance_name: "w1",
      objective: "OBJ-sync",
      success_criteria: "CRIT-1",
      overrides: { reasoning: { effort: "high" } },
      initial_message: { message: "please start" },
    });
    expect(result.success).toBe(true);
    const sid = tag(result.output, "session-id")!;
    expect(result.output).toBe(`<instance-name>w1</instance-name>\n<session-id>${sid}</session-id>\n<finish-reason>stop</finish-reason>\n<content>worker says hi</content>`);
    const request = h.llm.completionRequests[0]!;
    expect(systemPrompt(request)).toContain("## Objective\nOBJ-sync");
    expect(systemPrompt(request)).toContain("## Success Criteria\nCRIT-1");
    expect(lastMessage(request)).toBe(`[Message from boss (session: ${parent})]: please start`);
    expect(request.body.reasoning_effort).toBe("high");
    expect((await h.runtime.store.getSession(sid))?.reasoning).toEqual({ effort: "high" });
  });

  it("async: returns a notice at once and delivers the final reply into the caller as a new user message", async () => {
    h = await createAgentsHarness();
    h.worker("OBJ-async").enqueue(reply().text("async result").stop());
    const parent = await h.bossSession();
    const delivered = h.nextUserMessage(parent);
    const result = await h.call(agentSpawn, parent, {
      agent: "worker",
      instance_name: "w1",
      objective: "OBJ-async",
      initial_message: { message: "work in background", async_inform: true },
    });
    const sid = tag(result.output, "session-id")!;
    expect(tag(result.output, "notice")).toMatch(/queued.*delivered to this session as a new user message/);
    expect(tag(result.output, "content")).toBeUndefined();
    expect(await delivered).toBe(`[Message from worker (session: ${sid})]: async result`);
    const seed = (await h.messages(sid))[0]!;
    expect(seed.content).toBe(`[Message from boss (session: ${parent})]: work in background`);
  });

  it("refuses a reused instance_name under the same caller with VALIDATION_ERROR; another caller may reuse it", async () => {
    h = await createAgentsHarness();
    const a = await h.bossSession();
    const b = await h.bossSession();
    expect((await h.call(agentSpawn, a, { agent: "worker", instance_name: "dup", objective: "x" })).success).toBe(true);
    const again = await h.call(agentSpawn, a, { agent: "worker", instance_name: "dup", objective: "y" });
    expect(again.output).toMatch(/^Error: VALIDATION_ERROR — instance_name "dup" is already used/);
    expect((await h.call(agentSpawn, b, { agent: "worker", instance_name: "dup", objective: "z" })).success).toBe(true);
    expect(await h.runtime.store.listSessions({ parentSessionId: a })).toHaveLength(1);
  });

  it("answers AGENT_NOT_FOUND for an unknown agent and creates nothing", async () => {
    h = await createAgentsHarness();
    const parent = await h.bossSession();
    const result = await h.call(agentSpawn, parent, { agent: "nobody", instance_name: "n", objective: "x" });
    expect(result.output).toMatch(/^Error: AGENT_NOT_FOUND — no agent named "nobody" \(known agents: .*worker/);
    expect(await h.runtime.store.listSessions({ parentSessionId: parent })).toHaveLength(0);
  });

  it("refuses the removed budget_override / thinking / effort keys and points to agent_control update-session", async () => {
    h = await createAgentsHarness();
    const parent = await h.bossSession();
    const legacy = await h.call(agentSpawn, parent, { agent: "worker", instance_name: "a", objective: "x", budget_override: { max_tokens: 5 } });
    expect(legacy.output).toMatch(/^Error: VALIDATION_ERROR — .*budget_override.*agent_control.*update-session/);
    const nested = await h.call(agentSpawn, parent, { agent: "worker", instance_name: "a", objective: "x", overrides: { thinking: true } });
    expect(nested.output).toMatch(/^Error: VALIDATION_ERROR — "thinking" is no longer accepted.*overrides: \{ reasoning/);
    const effort = await h.call(agentSpawn, parent, { agent: "worker", instance_name: "a", objective: "x", effort: "high" });
    expect(effort.output).toMatch(/^Error: VALIDATION_ERROR — a bare "effort"/);
    expect(await h.runtime.store.listSessions({ parentSessionId: parent })).toHaveLength(0);
  });

  it("enforces max_spawn_depth from settings with BUDGET_EXCEEDED and the remediation hint", async () => {
    h = await createAgentsHarness({ settings: { budget: { max_spawn_depth: 1 } } });
    const root = await h.bossSession();
    const first = await h.call(agentSpawn, root, { agent: "worker", instance_name: "c1", objective: "x" });
    const child = tag(first.output, "session-id")!;
    expect((await h.runtime.store.getSession(child))?.spawn_depth).toBe(1);
    const deeper = await h.call(agentSpawn, child, { agent: "worker", instance_name: "c2", objective: "y" });
    expect(deeper.success).toBe(false);
    expect(deeper.output).toMatch(/^Error: BUDGET_EXCEEDED — spawn depth limit reached: this session is at spawn_depth 1 and max_spawn_depth is 1/);
    expect(deeper.output).toContain("edit_agent_or_caller_budget");
    expect((deeper.details?.error as { details?: unknown }).details).toMatchObject({ remediation: "edit_agent_or_caller_budget" });
  });

  it("the agent's budget beats settings, and the caller session's override beats both and is inherited", async () => {
    h = await createAgentsHarness({ settings: { budget: { max_spawn_depth: 0 } }, agents: { deep: { systemPrompt: "ROLE=deep", budget: { max_spawn_depth: 5 } } } });
    const boss = await h.bossSession();
    expect((await h.call(agentSpawn, boss, { agent: "worker", instance_name: "c", objective: "x" })).output).toMatch(/BUDGET_EXCEEDED/);
    const deep = (await h.runtime.sessions.create({ agent: "deep" })).id;
    const ok = await h.call(agentSpawn, deep, { agent: "deep", instance_name: "d1", objective: "x" });
    expect(ok.success).toBe(true);
    const limited = (await h.runtime.sessions.create({ agent: "deep", budget_override: { max_spawn_depth: 1 } })).id;
    const child = tag((await h.call(agentSpawn, limited, { agent: "deep", instance_name: "d1", objective: "x" })).output, "session-id")!;
    expect((await h.runtime.store.getSession(child))?.budget_override).toEqual({ max_spawn_depth: 1 });
    expect((await h.call(agentSpawn, child, { agent: "deep", instance_name: "d2", objective: "x" })).output).toMatch(/^Error: BUDGET_EXCEEDED — spawn depth limit reached/);
  });

  it("surfaces the live-session limit clearly", async () => {
    h = await createAgentsHarness({ settings: { limits: { maxLiveSessions: 2 } } });
    const parent = await h.bossSession();
    expect((await h.call(agentSpawn, parent, { agent: "worker", instance_name: "a", objective: "x" })).success).toBe(true);
    const over = await h.call(agentSpawn, parent, { agent: "worker", instance_name: "b", objective: "x" });
    expect(over.output).toMatch(/^Error: BUDGET_EXCEEDED — cannot spawn "b": too many open sessions \(limit 2, settings.limits.maxLiveSessions\)/);
  });

  it("through the loop: the parent's model calls agent_spawn and the children show up in GET /sessions with parent_session_id", async () => {
    h = await createAgentsHarness();
    h.boss.enqueue(
      reply()
        .tool("agent_spawn", { agent: "worker", instance_name: "alpha", objective: "OBJ-a" })
        .tool("agent_spawn", { agent: "worker", instance_name: "beta", objective: "OBJ-b" })
        .stop(),
      reply().text("spawned two").stop(),
    );
    const parent = await h.bossSession();
    const other = await h.bossSession();
    expect((await (await h.runtime.sessions.send(parent, "spawn please")).result).content).toBe("spawned two");
    const tools = (await h.messages(parent)).filter((m) => m.role === "tool");
    expect(tools.map((t) => tag(t.content!, "instance-name"))).toEqual(["alpha", "beta"]);

    const server = await h.serve();
    type Row = { id: string; parent_session_id: string | null; spawn_depth: number };
    // The listing is an array of rows (older builds wrapped it as { sessions }).
    const rowsOf = (body: Row[] | { sessions: Row[] }) => (Array.isArray(body) ? body : body.sessions);
    const list = rowsOf((await (await server.fetch("/sessions")).json()) as Row[]);
    const children = list.filter((s) => s.parent_session_id === parent);
    expect(children).toHaveLength(2);
    expect(children.every((c) => c.spawn_depth === 1)).toBe(true);
    const rows = rowsOf((await (await server.fetch(`/sessions?parent=${parent}`)).json()) as Row[]);
    expect(rows.map((r) => r.id).sort()).toEqual(children.map((c) => c.id).sort());
    expect(rows.some((r) => r.id === other)).toBe(false);
  });

  it("closing a parent closes its sub-agents, depth first", async () => {
    h = await createAgentsHarness();
    const parent = await h.bossSession();
    const first = await h.call(agentSpawn, parent, { agent: "worker", instance_name: "w1", objective: "OBJ-a" });
    const child = tag(first.output, "session-id")!;
    const second = await h.call(agentSpawn, child, { agent: "worker", instance_name: "w2", objective: "OBJ-b" });
    const grandchild = tag(second.output, "session-id")!;
    await h.runtime.sessions.close(parent);
    for (const id of [parent, child, grandchild]) expect((await h.runtime.store.getSession(id))?.status).toBe("closed");
  });
});

import { describe, expect, it } from "vitest";
import { builtinDefaultAgent } from "../../src/config/defaults.js";
import { buildSessionBrief, buildSystemPrompt } from "../../src/core/context-builder.js";
import type { SessionRow } from "../../src/store/store.js";

function session(over: Partial<SessionRow>): SessionRow {
  return {
    id: "ses_a",
    agent: "default",
    mode: "chat",
    status: "idle",
    parent_session_id: null,
    spawn_depth: 0,
    instance_name: null,
    model: null,
    reasoning: null,
    budget_override: null,
    objective: null,
    success_criteria: null,
    token_usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } as SessionRow["token_usage"],
    context_size: 0,
    cost_usd: 0,
    created_at: "2026-12-01T10:00:00.000Z",
    updated_at: "2026-12-01T10:00:00.000Z",
    ...over,
  };
}

const agent = { ...builtinDefaultAgent(), systemPrompt: "You are the default agent." };
const build = (s: SessionRow) => buildSystemPrompt({ agent, session: s, workspace: "/ws", toolSummary: "## Tools\n- a: does a" });

describe("buildSystemPrompt", () => {
  it("is byte-identical for two sessions of one agent started the same day (no session id)", () => {
    const a = build(session({ id: "ses_a" }));
    const b = build(session({ id: "ses_b", created_at: "2026-12-01T23:59:00.000Z" }));
    expect(a).toBe(b);
    expect(a).not.toContain("ses_a");
    expect(a).toBe("You are the default agent.\n\n## Tools\n- a: does a\n\n## Environment\nWorkspace: /ws\n\nSession started: 2026-12-01");
  });

  it("leaves a sub-agent's objective and criteria out: they are the session brief, sent after the prompt and the tools", () => {
    const spawned = session({ objective: "Count files.", success_criteria: "A number." });
    expect(build(spawned)).toBe(build(session({})));
    expect(buildSessionBrief(spawned)).toBe("## Objective\nCount files.\n\n## Success Criteria\nA number.");
    expect(buildSessionBrief(session({ objective: "  Only this.\n" }))).toBe("## Objective\nOnly this.");
    expect(buildSessionBrief(session({}))).toBe("");
  });

  it("uses the session's start date, so the prompt does not change as days pass", () => {
    expect(build(session({ created_at: "2026-11-30T08:00:00.000Z" }))).toMatch(/Session started: 2026-11-30$/);
  });
});

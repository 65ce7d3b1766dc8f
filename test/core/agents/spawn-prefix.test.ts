import { afterEach, describe, expect, it } from "vitest";
import { agentSpawn } from "../../../src/core/agents/tools/agent-spawn.js";
import { reply, startFakeLlm, type FakeLlm, type FakeRequest } from "../../helpers/fake-llm.js";
import { createAgentsHarness, systemPrompt, tag, type AgentsHarness } from "./harness.js";

let h: AgentsHarness | undefined;
let llm: FakeLlm | undefined;
afterEach(async () => {
  await h?.close();
  await llm?.close();
  h = undefined;
  llm = undefined;
});

function commonPrefix(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** What a chat template renders before the conversation: the first system message, then the tools. */
function templatePrefix(request: FakeRequest): string {
  const body = request.body as { messages: { role: string; content: unknown }[]; tools: unknown };
  return JSON.stringify(body.messages[0]) + JSON.stringify(body.tools);
}

describe("sub-agents of one agent with different objectives", () => {
  it("share at least 90 % of their first request's bytes, and the objective still reaches each one's system prompt", async () => {
    llm = await startFakeLlm({ keepRawBodies: true });
    h = await createAgentsHarness({ llm });
    const objectives = ["Count the TypeScript files under src/ and report the number.", "Summarise the README in three sentences for a new contributor."];
    for (const objective of objectives) h.worker(objective).enqueue(reply().text("done").stop());
    const parent = await h.bossSession();
    const children: string[] = [];
    for (const [i, objective] of objectives.entries()) {
      const result = await h.call(agentSpawn, parent, {
        agent: "worker",
        instance_name: `w${i}`,
        objective,
        success_criteria: i === 0 ? "One number." : "Three sentences.",
        initial_message: { message: "please start" },
      });
      expect(result.success, result.output).toBe(true);
      children.push(tag(result.output, "session-id")!);
    }
    const [a, b] = llm.completionRequests;
    expect(llm.completionRequests).toHaveLength(2);
    expect(systemPrompt(a!)).toContain(`## Objective\n${objectives[0]}\n\n## Success Criteria\nOne number.`);
    expect(systemPrompt(b!)).toContain(`## Objective\n${objectives[1]}\n\n## Success Criteria\nThree sentences.`);

    const asSent = commonPrefix(a!.rawBody!, b!.rawBody!) / Math.max(a!.rawBody!.length, b!.rawBody!.length);
    const rendered = commonPrefix(templatePrefix(a!), templatePrefix(b!)) / Math.max(templatePrefix(a!).length, templatePrefix(b!).length);
    console.log(`[spawn-prefix.test] shared prefix: ${(asSent * 100).toFixed(1)} % of the body as sent, ${(rendered * 100).toFixed(1)} % of system message + tools`);
    expect(asSent).toBeGreaterThanOrEqual(0.9);
    expect(rendered).toBe(1);
  });
});

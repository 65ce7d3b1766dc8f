/**
 * CLAUDE ENGINE TESTS (real Claude Agent SDK + `claude` binary against the fake Anthropic
 * server): AGENTS.md instructions and skills reach the model as on the openai engine, the
 * skill tool through the `veil` MCP server.
 */
import { afterEach, describe, expect, it } from "vitest";
import { message } from "../../helpers/fake-anthropic.js";
import { createEngineHarness, toolResults, type EngineHarness } from "./harness.js";

let h: EngineHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("claude-cli engine: instructions and skills", () => {
  it("carries AGENTS.md and the skills list in the system prompt, loads a skill through mcp__veil__skill, and appends a nested AGENTS.md", async () => {
    h = await createEngineHarness({
      files: {
        "AGENTS.md": "Project rule: never push to main.",
        "pkg/AGENTS.md": "Pkg rule: keep functions short.",
        "pkg/a.txt": "alpha",
        ".veil/skills/release/SKILL.md": "---\nname: release\ndescription: Cut a release of this project.\n---\nBump the version, then tag it.\n",
        ".veil/skills/release/checklist.md": "- tests green",
      },
    });
    h.api.enqueue(message().tool("mcp__veil__skill", { name: "release" }).tool("mcp__veil__read_file", { file: "pkg/a.txt" }).stop(), message().text("done").stop());
    const outcome = await h.turn("cut a release");
    expect(outcome.error).toBeUndefined();

    const first = h.api.messageRequests[0]!.body;
    const system = JSON.stringify(first.system);
    expect(system).toContain("Project rule: never push to main.");
    expect(system).toContain("## Skills");
    expect(system).toContain("- release: Cut a release of this project.");
    expect(system.indexOf("never push to main")).toBeLessThan(system.indexOf("## Skills"));
    const names: string[] = first.tools.map((t: { name: string }) => t.name);
    expect(names).toContain("mcp__veil__skill");
    // The SDK's own skill machinery stays off: Veil's tool is the one way in.
    expect(names).not.toContain("Skill");

    const results = toolResults(h);
    expect(results.skill).toContain("Bump the version, then tag it.");
    expect(results.skill).toContain(h.ws.path(".veil/skills/release/checklist.md"));
    expect(results.read_file).toContain("alpha");
    expect(results.read_file).toContain("Pkg rule: keep functions short.");
    // What the model got back is the same text.
    expect(JSON.stringify(h.api.messageRequests[1]!.body.messages)).toContain("Pkg rule: keep functions short.");
  });

  it("registers no skill tool when there are no skills", async () => {
    h = await createEngineHarness();
    h.api.enqueue(message().text("hi").stop());
    await h.turn("hello");
    const names: string[] = h.api.messageRequests[0]!.body.tools.map((t: { name: string }) => t.name);
    expect(names).not.toContain("mcp__veil__skill");
    expect(JSON.stringify(h.api.messageRequests[0]!.body.system)).not.toContain("## Skills");
  });
});

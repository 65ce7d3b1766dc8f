import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { VeilClient } from "../../src/client/index.js";
import { reply, type FakeReply, type FakeRequest } from "../helpers/fake-llm.js";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

const skillMd = (name: string, description: string, body: string) => `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`;

const SKILLS = {
  ".veil/skills/pdf-forms/SKILL.md": skillMd("pdf-forms", "Fill in PDF forms; use for any .pdf with form fields.", "# Filling a form\nRun scripts/fill.py with the field values."),
  ".veil/skills/pdf-forms/scripts/fill.py": "print('fill')",
  ".veil/skills/pdf-forms/reference.md": "Field types.",
  ".claude/skills/changelog/SKILL.md": skillMd("changelog", "Write a CHANGELOG entry in the project's style.", "Keep entries short."),
};

function toolNames(request: FakeRequest): string[] {
  return request.body.tools.map((t: { function: { name: string } }) => t.function.name);
}

function lastToolResult(request: FakeRequest): string {
  return request.body.messages.filter((m: { role: string }) => m.role === "tool").at(-1).content;
}

async function turn(agent = "default", ...replies: FakeReply[]): Promise<FakeRequest[]> {
  const before = h.llm.completionRequests.length;
  h.llm.enqueue(...replies, reply().text("done").stop());
  const session = await h.runtime.sessions.create({ agent });
  await (await h.runtime.sessions.send(session.id, "go")).result;
  return h.llm.completionRequests.slice(before);
}

describe("skills", () => {
  it("with no skill anywhere, tools[] is the 24 built-ins and the prompt has no Skills section", async () => {
    h = await createRuntimeHarness();
    const [request] = await turn();
    expect(toolNames(request!)).toHaveLength(24);
    expect(toolNames(request!)).not.toContain("skill");
    expect(request!.body.messages[0].content).not.toContain("## Skills");
  });

  it("lists each skill by name and description in the summary, adds the skill tool after the built-ins, and loads a skill's body and files", async () => {
    h = await createRuntimeHarness({ files: SKILLS });
    const requests = await turn("default", reply().tool("skill", { name: "pdf-forms" }).stop(), reply().tool("skill", { name: "nope" }).stop());
    const first = requests[0]!;
    const names = toolNames(first);
    expect(names).toHaveLength(25);
    expect(names.at(-1)).toBe("skill");
    const system = first.body.messages[0].content as string;
    expect(system).toContain(
      [
        "## Skills",
        "Skills are instructions for particular kinds of task, loaded on demand. When a task matches a skill's description, call skill with its name before you start, then follow what it returns.",
        "- changelog: Write a CHANGELOG entry in the project's style.",
        "- pdf-forms: Fill in PDF forms; use for any .pdf with form fields.",
      ].join("\n"),
    );
    expect(system.indexOf("## Skills")).toBeLessThan(system.indexOf("## Environment"));

    const folder = join(h.ws.root, ".veil/skills/pdf-forms");
    expect(lastToolResult(requests[1]!)).toBe(
      [
        `<skill name="pdf-forms" folder="${folder}">`,
        "# Filling a form\nRun scripts/fill.py with the field values.",
        "</skill>",
        "",
        "Other files in the skill's folder (read them with read_file when the instructions refer to them):",
        join(folder, "reference.md"),
        join(folder, "scripts/fill.py"),
      ].join("\n"),
    );
    expect(lastToolResult(requests[2]!)).toBe('Error: SKILL_NOT_FOUND — no skill named "nope"; the skills are: changelog, pdf-forms');
  });

  it("tool_search finds skills beside tools and says how to load them", async () => {
    h = await createRuntimeHarness({ files: SKILLS });
    const requests = await turn("default", reply().tool("tool_search", { query: "pdf" }).stop());
    const found = JSON.parse(lastToolResult(requests[1]!));
    expect(found).toContainEqual({ skill: "pdf-forms", description: "Fill in PDF forms; use for any .pdf with form fields.", load: 'skill({ "name": "pdf-forms" })' });
  });

  it("an agent whose mode disallows the skill tool gets neither the tool nor the list", async () => {
    h = await createRuntimeHarness({ files: { ...SKILLS, ".veil/agents/plain/agent.json": JSON.stringify({ name: "plain", modes: { chat: { disallowedTools: ["skill"] } } }) } });
    const [request] = await turn("plain");
    expect(toolNames(request!)).not.toContain("skill");
    expect(request!.body.messages[0].content).not.toContain("## Skills");
  });

  it("keeps the whole summary under 8 KB: many skills lose their descriptions, and the prompt stays byte-identical across sessions", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 60; i++) files[`.veil/skills/s${i}/SKILL.md`] = skillMd(`skill-${String(i).padStart(2, "0")}`, `Handles the kind of task number ${i}. `.repeat(6).trim(), "body");
    h = await createRuntimeHarness({ files });
    const [a] = await turn();
    const [b] = await turn();
    const system = a!.body.messages[0].content as string;
    expect(system).toBe(b!.body.messages[0].content);
    const section = system.slice(system.indexOf("## Skills"), system.indexOf("## Environment"));
    expect(Buffer.byteLength(section)).toBeLessThan(8 * 1024);
    expect(section).toContain("skill-00, skill-01");
    expect(section).not.toContain("Handles the kind");
  });

  it("sees a skill added, changed or removed on disk at the next session, without a restart", async () => {
    h = await createRuntimeHarness();
    expect(toolNames((await turn())[0]!)).not.toContain("skill");
    h.ws.write(".veil/skills/fresh/SKILL.md", skillMd("fresh", "Just added.", "new"));
    const [added] = await turn();
    expect(toolNames(added!)).toContain("skill");
    expect(added!.body.messages[0].content).toContain("- fresh: Just added.");
    rmSync(h.ws.path(".veil/skills/fresh"), { recursive: true });
    expect(toolNames((await turn())[0]!)).not.toContain("skill");
  });
});

describe("GET /skills", () => {
  it("lists an agent's skills in effect, shadowed and broken (typed client, /tools shows the skill tool), 404 for an unknown agent", async () => {
    h = await createRuntimeHarness({
      files: {
        ...SKILLS,
        ".veil/agents/writer/agent.json": JSON.stringify({ name: "writer" }),
        ".veil/agents/writer/skills/changelog/SKILL.md": skillMd("changelog", "The writer's own changelog style.", "Mine."),
        ".veil/skills/broken/SKILL.md": "---\nname: broken\n---\nno description",
      },
    });
    const server = await h.serve();
    const client = new VeilClient({ baseUrl: server.url, secret: TEST_SECRET });
    const skills = await client.skills("writer");
    expect(skills.map((s) => [s.name, s.state, s.scope])).toEqual([
      ["changelog", "active", "agent"],
      ["pdf-forms", "active", "project"],
      ["changelog", "shadowed", "project"],
      [null, "broken", "project"],
    ]);
    expect(skills[1]).toMatchObject({ description: "Fill in PDF forms; use for any .pdf with form fields.", file: h.ws.path(".veil/skills/pdf-forms/SKILL.md"), files: [h.ws.path(".veil/skills/pdf-forms/reference.md"), h.ws.path(".veil/skills/pdf-forms/scripts/fill.py")], truncated: false });
    expect(skills[2]!.shadowedBy).toBe(h.ws.path(".veil/agents/writer/skills/changelog"));
    expect(skills[3]).toEqual({ name: null, state: "broken", scope: "project", folder: h.ws.path(".veil/skills/broken"), file: h.ws.path(".veil/skills/broken/SKILL.md"), error: expect.stringContaining("has no `description`") });
    // The default agent (no folder) sees the project's changelog.
    expect((await client.skills()).find((s) => s.name === "changelog")?.scope).toBe("project");
    const tools = await client.tools("writer");
    expect(tools.find((t) => t.name === "skill")).toMatchObject({ tier: "builtin", state: "always" });
    const unknown = await server.fetch("/skills?agent=ghost");
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.code).toBe("AGENT_NOT_FOUND");
  });
});

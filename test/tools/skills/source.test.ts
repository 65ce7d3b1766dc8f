import { utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { memoryLogger } from "../../../src/base/log.js";
import { builtinDefaultAgent } from "../../../src/config/defaults.js";
import type { AgentConfig, VeilPaths } from "../../../src/config/types.js";
import { parseSkillFile } from "../../../src/tools/skills/skill-file.js";
import { createSkillSource, skillFiles } from "../../../src/tools/skills/source.js";
import { skillsSection } from "../../../src/tools/skills/summary.js";
import { tmpWorkspace, type TempWorkspace } from "../../helpers/workspace.js";

const skillMd = (name: string, description: string, body = `Do ${name}.`) => `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`;

describe("parseSkillFile", () => {
  it("reads name, description (folded YAML too) and the body", () => {
    const parsed = parseSkillFile("---\nname: pdf-forms\ndescription: >\n  Fill PDF forms.\n  Use for any .pdf with fields.\nlicense: MIT\n---\n# Steps\n1. Read the form.\n");
    expect(parsed).toEqual({ ok: true, skill: { name: "pdf-forms", description: "Fill PDF forms. Use for any .pdf with fields.", body: "# Steps\n1. Read the form." } });
  });

  it.each([
    ["no front matter", "# Just markdown", "must start with YAML front matter"],
    ["an unclosed front matter", "---\nname: a\ndescription: b\n", "never closes"],
    ["broken YAML", "---\nname: [a\ndescription: b\n---\n", "not valid YAML"],
    ["a duplicated key", "---\nname: a\nname: b\ndescription: c\n---\n", "not valid YAML"],
    ["a list instead of a mapping", "---\n- a\n- b\n---\n", "must be a YAML mapping"],
    ["no name", "---\ndescription: b\n---\n", "has no `name`"],
    ["a number as name", "---\nname: 12\ndescription: b\n---\n", "`name` must be a string"],
    ["a mapping as description", "---\nname: a\ndescription: use: when asked\n---\n", "not valid YAML"],
    ["a list as description", "---\nname: a\ndescription: [x]\n---\n", "`description` must be a string"],
    ["a name with spaces", "---\nname: my skill\ndescription: b\n---\n", "must be letters, digits"],
    ["no description", "---\nname: a\n---\n", "has no `description`"],
    ["an empty description", "---\nname: a\ndescription: \"  \"\n---\n", "has no `description`"],
  ])("refuses %s with a reason naming it", (_label, text, reason) => {
    const parsed = parseSkillFile(text);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? "" : parsed.reason).toContain(reason);
  });

  it("refuses a front matter that never closes within 16 KB without reading on", () => {
    const parsed = parseSkillFile(`---\nname: a\ndescription: b\n${"x: y\n".repeat(5000)}`);
    expect(parsed.ok ? "" : parsed.reason).toContain("within 16384 bytes");
  });
});

describe("skill source", () => {
  let ws: TempWorkspace;
  afterEach(() => ws?.cleanup());

  function setup(files: Record<string, string>): { paths: VeilPaths; agent: AgentConfig; log: ReturnType<typeof memoryLogger> } {
    ws = tmpWorkspace({ files });
    const paths = { workspace: ws.root, projectDir: ws.path(".veil"), homeDir: ws.path("home"), dbPath: "", secretPath: "", memoryDir: "" };
    const agent = { ...builtinDefaultAgent(), name: "writer", agentFolder: ws.path(".veil/agents/writer"), source: "project" as const };
    return { paths, agent, log: memoryLogger() };
  }

  it("resolves duplicate names by precedence: agent > .veil/skills > .claude/skills > $VEIL_HOME/skills", () => {
    const { paths, agent, log } = setup({
      ".veil/agents/writer/skills/style/SKILL.md": skillMd("style", "agent style"),
      ".veil/skills/style/SKILL.md": skillMd("style", "project style"),
      ".veil/skills/deploy/SKILL.md": skillMd("deploy", "veil deploy"),
      ".claude/skills/deploy/SKILL.md": skillMd("deploy", "claude deploy"),
      ".claude/skills/review/SKILL.md": skillMd("review", "claude review"),
      "home/skills/review/SKILL.md": skillMd("review", "global review"),
      "home/skills/zebra/SKILL.md": skillMd("zebra", "global zebra"),
    });
    const catalog = createSkillSource({ paths, log }).discover(agent);
    expect(catalog.skills.map((s) => [s.name, s.description, s.scope])).toEqual([
      ["deploy", "veil deploy", "project"],
      ["review", "claude review", "project"],
      ["style", "agent style", "agent"],
      ["zebra", "global zebra", "global"],
    ]);
    expect(catalog.shadowed.map((s) => [s.description, s.shadowedBy])).toEqual([
      ["project style", ws.path(".veil/agents/writer/skills/style")],
      ["claude deploy", ws.path(".veil/skills/deploy")],
      ["global review", ws.path(".claude/skills/review")],
    ]);
    // The built-in default agent has no folder, so no agent skills.
    expect(createSkillSource({ paths, log }).discover(builtinDefaultAgent()).skills.find((s) => s.name === "style")?.scope).toBe("project");
  });

  it("lists broken folders with their reason, logs each once per change, and keeps the good ones", () => {
    const { paths, agent, log } = setup({
      ".veil/skills/good/SKILL.md": skillMd("good", "works"),
      ".veil/skills/bad-yaml/SKILL.md": "---\nname: [oops\n---\n",
      ".veil/skills/empty/notes.txt": "no SKILL.md here",
    });
    const source = createSkillSource({ paths, log });
    const first = source.discover(agent);
    source.discover(agent);
    expect(first.skills.map((s) => s.name)).toEqual(["good"]);
    expect(first.broken).toEqual([
      { scope: "project", folder: ws.path(".veil/skills/bad-yaml"), file: ws.path(".veil/skills/bad-yaml/SKILL.md"), reason: expect.stringContaining("not valid YAML") },
      { scope: "project", folder: ws.path(".veil/skills/empty"), file: ws.path(".veil/skills/empty/SKILL.md"), reason: "no SKILL.md in this folder" },
    ]);
    expect(log.entries.filter((e) => e.message.startsWith("skill skipped")).length).toBe(2);
  });

  it("re-reads a changed SKILL.md and sees added and removed folders without a new source", () => {
    const { paths, agent, log } = setup({ ".veil/skills/one/SKILL.md": skillMd("one", "first") });
    const source = createSkillSource({ paths, log });
    expect(source.discover(agent).skills.map((s) => s.description)).toEqual(["first"]);
    const file = ws.path(".veil/skills/one/SKILL.md");
    writeFileSync(file, skillMd("one", "changed"));
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    ws.write(".veil/skills/two/SKILL.md", skillMd("two", "added"));
    expect(source.discover(agent).skills.map((s) => s.description)).toEqual(["changed", "added"]);
    ws.write(".veil/skills/two/SKILL.md", "broken now");
    expect(source.discover(agent).broken.map((b) => b.folder)).toEqual([ws.path(".veil/skills/two")]);
  });

  it("bounds a huge SKILL.md at 256 KB and lists the folder's other files", async () => {
    const { paths, agent, log } = setup({
      ".veil/skills/big/SKILL.md": skillMd("big", "huge", `start\n${"y".repeat(400_000)}\nEND`),
      ".veil/skills/big/reference.md": "ref",
      ".veil/skills/big/scripts/run.sh": "echo hi",
      ".veil/skills/big/node_modules/x/index.js": "skipped",
    });
    const [skill] = createSkillSource({ paths, log }).discover(agent).skills;
    expect(skill!.truncated).toBe(true);
    expect(skill!.bytes).toBeGreaterThan(400_000);
    expect(skill!.body.length).toBeLessThanOrEqual(256 * 1024);
    expect(skill!.body).not.toContain("END");
    expect(await skillFiles(skill!)).toEqual({ files: [join(skill!.folder, "reference.md"), join(skill!.folder, "scripts/run.sh")], more: 0 });
  });
});

describe("skillsSection", () => {
  const skills = Array.from({ length: 40 }, (_, i) => ({ name: `skill-${String(i).padStart(2, "0")}`, description: `Does task number ${i}. `.repeat(12) }));

  it("lists names with descriptions while they fit, then names alone, then a count", () => {
    const few = skillsSection(skills.slice(0, 2), 8192);
    expect(few).toContain("- skill-00: Does task number 0.");
    const many = skillsSection(skills, 8192);
    expect(Buffer.byteLength(many)).toBeLessThan(8192);
    expect(many).toContain("tool_search with a word of the task shows their descriptions");
    expect(many).toContain("skill-00, skill-01");
    expect(many).not.toContain("Does task number");
    const tight = skillsSection(skills, 600);
    expect(Buffer.byteLength(tight)).toBeLessThan(600);
    expect(tight).toMatch(/… and \d+ more$/);
  });
});

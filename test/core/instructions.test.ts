import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { reply, type FakeRequest } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

const ECHO_TOOL = {
  ".veil/tools/echo_upper/tool.json": JSON.stringify({ name: "echo_upper", description: "Uppercase the input", input_schema: { type: "object", properties: {} } }),
  ".veil/tools/echo_upper/index.js": "module.exports = async () => 'X';",
};

function systemOf(request: FakeRequest): string {
  return request.body.messages[0].content as string;
}

function toolResults(request: FakeRequest): string[] {
  return request.body.messages.filter((m: { role: string }) => m.role === "tool").map((m: { content: string }) => m.content);
}

async function firstPrompt(agent = "default"): Promise<string> {
  h.llm.enqueue(reply().text("ok").stop());
  const session = await h.runtime.sessions.create({ agent });
  await (await h.runtime.sessions.send(session.id, "hi")).result;
  return systemOf(h.llm.completionRequests.at(-1)!);
}

describe("project instructions in the system prompt", () => {
  it("puts $VEIL_HOME/AGENTS.md, then the workspace's AGENTS.md, after the agent prompt and before the tool summary; two sessions get the same bytes", async () => {
    h = await createRuntimeHarness({ files: { "AGENTS.md": "Run `make check` before you finish.\n", "CLAUDE.md": "claude-only text", ...ECHO_TOOL } });
    writeFileSync(join(h.env.VEIL_HOME!, "AGENTS.md"), "Answer in British English.");
    const a = await firstPrompt();
    const b = await firstPrompt();
    expect(a).toBe(b);
    const global = a.indexOf(`## The user's instructions (${join(h.env.VEIL_HOME!, "AGENTS.md")}, for every project)\nAnswer in British English.`);
    const project = a.indexOf(`## Project instructions (${join(h.ws.root, "AGENTS.md")})\nRun \`make check\` before you finish.`);
    const summary = a.indexOf("## Custom tools");
    expect(a.indexOf("You are Veil")).toBe(0);
    expect(global).toBeGreaterThan(0);
    expect(project).toBeGreaterThan(global);
    expect(summary).toBeGreaterThan(project);
    expect(a.indexOf("## Environment")).toBeGreaterThan(summary);
    // AGENTS.md wins over CLAUDE.md at the root.
    expect(a).not.toContain("claude-only text");
  });

  it("reads CLAUDE.md where the root has no AGENTS.md, and re-reads a changed file without a restart", async () => {
    h = await createRuntimeHarness({ files: { "CLAUDE.md": "Use tabs." } });
    expect(await firstPrompt()).toContain(`## Project instructions (${join(h.ws.root, "CLAUDE.md")})\nUse tabs.`);
    writeFileSync(join(h.ws.root, "AGENTS.md"), "Use spaces, four of them.");
    const next = await firstPrompt();
    expect(next).toContain("Use spaces, four of them.");
    expect(next).not.toContain("Use tabs.");
  });

  it("gives an agent with \"instructions\": false none of them, and no nested ones either", async () => {
    h = await createRuntimeHarness({
      files: {
        "AGENTS.md": "root rules",
        "sub/AGENTS.md": "sub rules",
        "sub/a.txt": "alpha",
        ".veil/agents/plain/agent.json": JSON.stringify({ name: "plain", systemPrompt: "Plain agent.", instructions: false }),
      },
    });
    expect(await firstPrompt("plain")).not.toContain("root rules");
    h.llm.enqueue(reply().tool("read_file", { file: "sub/a.txt" }).stop(), reply().text("done").stop());
    const session = await h.runtime.sessions.create({ agent: "plain" });
    await (await h.runtime.sessions.send(session.id, "read")).result;
    const results = toolResults(h.llm.completionRequests.at(-1)!);
    expect(results[0]).toContain("alpha");
    expect(results[0]).not.toContain("sub rules");
  });

  it("cuts a huge AGENTS.md at 64 KB with a note naming the file", async () => {
    h = await createRuntimeHarness({ files: { "AGENTS.md": `first line\n${"x".repeat(200_000)}\nLAST LINE` } });
    const prompt = await firstPrompt();
    expect(prompt).toContain("first line");
    expect(prompt).not.toContain("LAST LINE");
    expect(prompt).toContain(`[${join(h.ws.root, "AGENTS.md")} is 200021 bytes; only the first 65536 are shown here. Read the rest with read_file.]`);
    expect(Buffer.byteLength(prompt)).toBeLessThan(70_000);
  });
});

describe("nested AGENTS.md files", () => {
  it("adds a folder's AGENTS.md to the first file-tool result that reaches it, once per session, ancestors first", async () => {
    h = await createRuntimeHarness({
      files: {
        "AGENTS.md": "root rules",
        "pkg/AGENTS.md": "pkg rules: run the pkg tests",
        "pkg/a.txt": "alpha",
        "pkg/b.txt": "beta",
        "pkg/deep/CLAUDE.md": "deep rules from CLAUDE.md",
        "pkg/deep/c.txt": "gamma",
        "other/d.txt": "delta",
      },
    });
    h.llm.enqueue(
      reply().tool("read_file", { file: "pkg/a.txt" }).tool("read_file", { file: "other/d.txt" }).stop(),
      reply().tool("read_file", { file: join(h.ws.root, "pkg/b.txt") }).tool("list_dir", { dir: "pkg/deep" }).stop(),
      reply().tool("read_file", { file: "pkg/missing.txt" }).stop(),
      reply().text("done").stop(),
    );
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "look around")).result;

    // Each request repeats the earlier results: keep the ones the previous step added.
    const [first, second, third] = [1, 2, 3].map((i) => toolResults(h.llm.completionRequests[i]!).slice(toolResults(h.llm.completionRequests[i - 1]!).length));
    expect(first![0]).toContain("alpha");
    expect(first![0]).toContain("<system-reminder>Instructions from pkg/AGENTS.md (they apply to the files in pkg/):\npkg rules: run the pkg tests</system-reminder>");
    expect(first![1]).toBe(first![1]!.replace("<system-reminder>", "")); // other/ has none
    // The root's file is in the system prompt, never in a result.
    expect(first!.join("\n")).not.toContain("root rules");
    // pkg/ was given already; pkg/deep/ is new (CLAUDE.md where there is no AGENTS.md).
    expect(second![0]).toContain("beta");
    expect(second![0]).not.toContain("pkg rules");
    expect(second![1]).toContain("Instructions from pkg/deep/CLAUDE.md (they apply to the files in pkg/deep/):\ndeep rules from CLAUDE.md");
    expect(second![1]).not.toContain("pkg rules");
    // A failed call adds nothing.
    expect(third![0]).toMatch(/^Error: /);
    expect(third![0]).not.toContain("<system-reminder>");
    const end = h.events.find((e) => e.type === "tool.end" && (e as { output?: string }).output?.includes("alpha")) as { details?: { instructions?: string[] } };
    expect(end.details?.instructions).toEqual(["pkg/AGENTS.md"]);

    // The session's meta keeps what it was given (a restart does not repeat it); another session is given them anew.
    expect(await h.runtime.store.getSessionMeta(session.id, "nestedInstructions")).toEqual(expect.arrayContaining(["pkg", "pkg/deep"]));
    h.llm.enqueue(reply().tool("read_file", { file: "pkg/a.txt" }).stop(), reply().text("done").stop());
    const other = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(other.id, "read")).result;
    expect(toolResults(h.llm.completionRequests.at(-1)!)[0]).toContain("pkg rules");
  });

  it("gives them again after a compaction (the result that carried them may be gone)", async () => {
    h = await createRuntimeHarness({ files: { "pkg/AGENTS.md": "pkg rules", "pkg/a.txt": "alpha" } });
    h.llm.enqueue(reply().tool("read_file", { file: "pkg/a.txt" }).stop(), reply().text("read it").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "read")).result;
    expect(toolResults(h.llm.completionRequests.at(-1)!)[0]).toContain("pkg rules");

    h.llm.enqueue(reply().text("Summary: read pkg/a.txt.").stop());
    await h.runtime.sessions.compact(session.id);
    expect(await h.runtime.store.getSessionMeta(session.id, "nestedInstructions")).toBeNull();

    h.llm.enqueue(reply().tool("read_file", { file: "pkg/a.txt" }).stop(), reply().text("again").stop());
    await (await h.runtime.sessions.send(session.id, "read again")).result;
    const results = toolResults(h.llm.completionRequests.at(-1)!);
    expect(results.at(-1)).toContain("pkg rules");
  });
});

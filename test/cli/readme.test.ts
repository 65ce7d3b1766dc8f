import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { spawnVeil, veilBuilt } from "../helpers/cli.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const README = readFileSync(fileURLToPath(new URL("../../README.md", import.meta.url)), "utf8");

/** The README's example files: a line "`<path>`:" followed by a fenced block. */
function readmeFiles(): Record<string, string> {
  const files: Record<string, string> = {};
  for (const match of README.matchAll(/^`(\.veil\/[^`]+)`:\n```\w*\n([\s\S]*?)\n```$/gm)) files[match[1]!] = match[2]! + "\n";
  return files;
}

let llm: FakeLlm;
let ws: TempWorkspace;
beforeEach(async () => {
  llm = await startFakeLlm();
});
afterEach(async () => {
  await llm.close();
  ws?.cleanup();
});

describe.skipIf(!veilBuilt)("the README's custom-tool example", () => {
  it("loads, is pre-activated for its agent, and answers the model", async () => {
    const files = readmeFiles();
    expect(Object.keys(files).sort()).toEqual([".veil/agents/counter/agent.json", ".veil/tools/count_lines/index.js", ".veil/tools/count_lines/tool.json"]);
    ws = tmpWorkspace({ files: { ...files, "notes.txt": "one\ntwo\nthree\n" } });
    mkdirSync(join(ws.root, "home"));
    const env = { ...process.env, VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk", VEIL_MODEL: "m", VEIL_HOME: join(ws.root, "home") };

    const tools = await spawnVeil(["tools", "--agent", "counter"], { cwd: ws.root, env });
    expect(tools.stdout).toMatch(/^count_lines\s+custom\s+pre-activated\s+Count the lines of a text file in the workspace\.$/m);

    llm.enqueue(reply().tool("count_lines", { path: "notes.txt" }).stop(), reply().text("3 lines").stop());
    const run = await spawnVeil(["run", "--agent", "counter", "how long is notes.txt?"], { cwd: ws.root, env });
    expect(run).toMatchObject({ code: 0, stdout: "3 lines\n" });
    expect(llm.completionRequests[0]!.body.tools.map((t: { function: { name: string } }) => t.function.name)).toContain("count_lines");
    expect(llm.completionRequests[1]!.body.messages.at(-1)).toMatchObject({ role: "tool", content: "notes.txt: 3 lines" });
  });
});

/**
 * `veil run --output-schema FILE` (the built binary against the fake LLM): stdout gets the
 * final answer's JSON alone; a mismatch after the repair requests exits 1 with its code; a
 * schema that cannot be used fails before anything is sent.
 */
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { spawnVeil, veilBuilt } from "../helpers/cli.js";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;
let llm: FakeLlm;
beforeEach(async () => {
  ws = tmpWorkspace();
  llm = await startFakeLlm();
});
afterEach(async () => {
  await llm.close();
  ws.cleanup();
});

const SCHEMA = { type: "object", properties: { lines: { type: "integer" } }, required: ["lines"], additionalProperties: false };

function veilRun(...args: string[]) {
  return spawnVeil(["run", "--workspace", ws.root, ...args], {
    cwd: ws.root,
    env: { ...process.env, VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk-test", VEIL_MODEL: "fake-model", VEIL_HOME: join(ws.root, ".home") },
  });
}

describe.skipIf(!veilBuilt)("veil run --output-schema", () => {
  it("prints the JSON alone on stdout and exits 0, after a tool call and one repair", async () => {
    ws.write("schema.json", JSON.stringify(SCHEMA));
    ws.write("notes.txt", "a\nb\nc\n");
    llm.enqueue(reply().text("Let me count. ").tool("bash", { command: "wc -l < notes.txt" }).stop());
    llm.enqueue(reply().text("There are 3 lines.").stop());
    llm.enqueue(reply().text('{ "lines": 3 }').stop());
    const result = await veilRun("--output-schema", "schema.json", "how many lines in notes.txt?");
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('{"lines":3}\n');
    expect(result.stderr).toContain("bash");
    expect(llm.completionRequests).toHaveLength(3);
    expect(llm.completionRequests[2]!.body.messages.at(-1).content).toContain("not valid JSON");
  });

  it("exits 1 printing OUTPUT_SCHEMA_MISMATCH when the answer never matches (two repairs)", async () => {
    ws.write("schema.json", JSON.stringify(SCHEMA));
    llm.respond(() => reply().text('{"lines":"three"}').stop());
    const result = await veilRun("--output-schema", "schema.json", "count");
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("OUTPUT_SCHEMA_MISMATCH");
    expect(result.stderr).toContain('"lines" must be integer');
    expect(llm.completionRequests).toHaveLength(3);
  });

  it("a file that is not a JSON Schema, or is missing, fails before anything is sent", async () => {
    ws.write("bad.json", JSON.stringify({ type: "integr" }));
    ws.write("not-json.json", "{ type: object }");
    const bad = await veilRun("--output-schema", "bad.json", "count");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^VALIDATION_ERROR: --output-schema .*bad\.json is not a valid JSON Schema/m);
    const notJson = await veilRun("--output-schema", "not-json.json", "count");
    expect(notJson.stderr).toMatch(/^VALIDATION_ERROR: --output-schema: .*not-json\.json is not JSON/m);
    const missing = await veilRun("--output-schema", "nowhere.json", "count");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^FILE_NOT_FOUND: --output-schema: cannot read/m);
    expect(llm.completionRequests).toHaveLength(0);
  });
});

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { spawnVeil, veilBuilt } from "../helpers/cli.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let llm: FakeLlm | undefined;
const workspaces: TempWorkspace[] = [];
afterEach(async () => {
  await llm?.close();
  llm = undefined;
  for (const ws of workspaces.splice(0)) ws.cleanup();
});

function workspace(): TempWorkspace {
  const ws = tmpWorkspace({ files: { "notes.txt": "one\ntwo\n" } });
  workspaces.push(ws);
  return ws;
}

describe.skipIf(!veilBuilt)("veil run with VEIL_RECORD, then VEIL_REPLAY (the README's regression test)", () => {
  it("replays a recorded run in a fresh workspace with no provider configured, and fails a changed prompt with REPLAY_MISMATCH", async () => {
    llm = await startFakeLlm();
    const recorded = workspace();
    const recording = join(recorded.root, "run.jsonl");
    llm.enqueue(reply().tool("read_file", { file: "notes.txt" }).stop(), reply().tool("write_file", { file: "count.txt", content: "2\n" }).stop(), reply().text("2 lines; wrote count.txt").stop());
    const base = { PATH: process.env.PATH, HOME: recorded.root, VEIL_MODEL: "fake-model" };
    const first = await spawnVeil(["run", "count the lines of notes.txt"], {
      cwd: recorded.root,
      env: { ...base, VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk-test", VEIL_HOME: join(recorded.root, ".home"), VEIL_RECORD: recording },
    });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe("2 lines; wrote count.txt\n");
    expect(readFileSync(recording, "utf8").trim().split("\n")).toHaveLength(3);
    await llm.close();
    llm = undefined;

    const fresh = workspace();
    const again = await spawnVeil(["run", "count the lines of notes.txt"], { cwd: fresh.root, env: { ...base, HOME: fresh.root, VEIL_HOME: join(fresh.root, ".home"), VEIL_REPLAY: recording } });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(first.stdout);
    expect(readFileSync(fresh.path("count.txt"), "utf8")).toBe("2\n");

    const changed = workspace();
    const other = await spawnVeil(["run", "count the words of notes.txt"], { cwd: changed.root, env: { ...base, HOME: changed.root, VEIL_HOME: join(changed.root, ".home"), VEIL_REPLAY: recording } });
    expect(other.code).not.toBe(0);
    expect(other.stderr).toContain("REPLAY_MISMATCH");
    expect(other.stderr).toContain('request.messages[1].content: differs at character 10: recorded "count the lines of notes.txt", now "count the words of notes.txt"');
  });
});

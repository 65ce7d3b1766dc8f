import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntimeHarness, type RuntimeHarness } from "../../helpers/runtime.js";
import { reply, startFakeLlm, type FakeLlm } from "../../helpers/fake-llm.js";
import { tmpWorkspace, type TempWorkspace } from "../../helpers/workspace.js";

let h: RuntimeHarness | undefined;
let spare: TempWorkspace | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  spare?.cleanup();
  spare = undefined;
});

/** A fake LLM that is no longer listening: any request sent to it fails. */
async function goneLlm(): Promise<FakeLlm> {
  const llm = await startFakeLlm();
  await llm.close();
  return llm;
}

/** The session's stored history, its workspace path put as <workspace> (each run has its own). */
async function rows(harness: RuntimeHarness, sessionId: string) {
  const messages = await harness.runtime.store.listMessages(sessionId);
  const calls = await harness.runtime.store.listToolCalls(sessionId);
  const text = JSON.stringify({
    messages: inCallOrder(messages).map((m) => ({ role: m.role, content: m.content, thinking: m.thinking, tool_calls: m.tool_calls, tool_call_id: m.tool_call_id, finish_reason: m.finish_reason, token_usage: m.token_usage })),
    calls: calls.map((c) => ({ id: c.id, name: c.name, state: c.state, arguments: c.arguments })),
  });
  return JSON.parse(text.split(harness.ws.root).join("<workspace>"));
}

/**
 * Parallel calls of one response store their results as each ends, so two runs may store them
 * in either order; each block of results is put in the order of the calls that asked for them.
 */
function inCallOrder<T extends { role: string; tool_call_id: string | null; tool_calls: { id: string }[] | null }>(messages: readonly T[]): T[] {
  const out: T[] = [];
  let order: string[] = [];
  for (let i = 0; i < messages.length; ) {
    const message = messages[i]!;
    if (message.role !== "tool") {
      if (message.tool_calls) order = message.tool_calls.map((call) => call.id);
      out.push(message);
      i++;
      continue;
    }
    let end = i;
    while (end < messages.length && messages[end]!.role === "tool") end++;
    out.push(...messages.slice(i, end).sort((a, b) => order.indexOf(a.tool_call_id ?? "") - order.indexOf(b.tool_call_id ?? "")));
    i = end;
  }
  return out;
}

function scriptMultiToolSession(llm: FakeLlm) {
  llm.enqueue(reply().thinking("look first").tool("write_file", { file: "notes.txt", content: "alpha\nbeta\n" }).tool("glob", { pattern: "*.md" }).usage({ prompt_tokens: 120, completion_tokens: 30 }).stop());
  llm.enqueue(reply().tool("bash", { command: "wc -l notes.txt" }).tool("read_file", { file: "readme.md" }).stop());
  llm.enqueue(reply().tool("edit_file", { file: "notes.txt", old_string: "beta", new_string: "gamma" }).stop());
  llm.enqueue(reply().text("notes.txt has 2 lines; beta is now gamma.").usage({ prompt_tokens: 400, completion_tokens: 12, cached_tokens: 300 }).stop());
}

describe("VEIL_RECORD and VEIL_REPLAY", () => {
  it("records a multi-tool session and replays it in another workspace with no model server: the same rows", async () => {
    spare = tmpWorkspace();
    const recording = join(spare.root, "session.jsonl");
    h = await createRuntimeHarness({ files: { "readme.md": "# hello\n" }, env: { VEIL_RECORD: recording } });
    scriptMultiToolSession(h.llm);
    const session = await h.runtime.sessions.create({ agent: "default" });
    const recorded = await (await h.runtime.sessions.send(session.id, "tidy the notes")).result;
    expect(recorded.stopReason).toBe("stop");
    const lines = readFileSync(recording, "utf8").trim().split("\n").map((line) => JSON.parse(line));
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatchObject({ workspace: h.ws.root, request: { modelKey: "fake-model", messages: [{ role: "system" }, { role: "user", content: "tidy the notes" }] }, response: { model: "fake-model", finishReason: "tool_calls" } });
    expect(lines[0].response.message.toolCalls.map((c: { name: string }) => c.name)).toEqual(["write_file", "glob"]);
    expect(lines[3].response.message.content).toBe("notes.txt has 2 lines; beta is now gamma.");
    const before = await rows(h, session.id);
    await h.close();

    h = await createRuntimeHarness({ files: { "readme.md": "# hello\n" }, llm: await goneLlm(), env: { VEIL_REPLAY: recording } });
    const again = await h.runtime.sessions.create({ agent: "default" });
    const replayed = await (await h.runtime.sessions.send(again.id, "tidy the notes")).result;
    expect(replayed).toMatchObject({ stopReason: "stop", content: recorded.content, usage: recorded.usage, iterations: 4 });
    expect(await rows(h, again.id)).toEqual(before);
    expect(readFileSync(h.ws.path("notes.txt"), "utf8")).toBe("alpha\ngamma\n");
    expect(h.llm.completionRequests).toHaveLength(0);
  });

  it("fails the turn with REPLAY_MISMATCH naming the first difference, and when the recording runs out", async () => {
    spare = tmpWorkspace();
    const recording = join(spare.root, "session.jsonl");
    h = await createRuntimeHarness({ env: { VEIL_RECORD: recording } });
    h.llm.enqueue(reply().text("hi there").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "say hi")).result;
    await h.close();

    h = await createRuntimeHarness({ llm: await goneLlm(), env: { VEIL_REPLAY: recording } });
    const other = await h.runtime.sessions.create({ agent: "default" });
    const mismatch = await (await h.runtime.sessions.send(other.id, "say bye")).result;
    expect(mismatch.stopReason).toBe("error");
    expect(mismatch.error?.code).toBe("REPLAY_MISMATCH");
    expect(mismatch.error?.message).toContain("line 1");
    expect(mismatch.error?.message).toContain('request.messages[1].content: differs at character 4: recorded "say hi", now "say bye"');

    const same = await (await h.runtime.sessions.send(other.id, "say hi")).result;
    // The session's history now holds the failed turn's prompt: the request is not the recorded one.
    expect(same.error?.code).toBe("REPLAY_MISMATCH");

    const fresh = await h.runtime.sessions.create({ agent: "default" });
    expect((await (await h.runtime.sessions.send(fresh.id, "say hi")).result).content).toBe("hi there");
    const spent = await (await h.runtime.sessions.send(fresh.id, "again")).result;
    expect(spent.error).toEqual({ code: "REPLAY_MISMATCH", message: expect.stringMatching(/has no recorded exchange left \(.* holds 1\)/) });
  });

  it("ignores ids, dates and the workspace path, nothing else", async () => {
    const { firstDifference, normalized } = await import("../../../src/llm/recordings/compare.js");
    const at = (text: string, workspace: string) => normalized({ messages: [{ role: "user", content: text }] }, workspace);
    expect(firstDifference(at("in /a/ws on 2026-01-02T03:04:05.000Z, session sess_AbCdEf123456", "/a/ws"), at("in /b/other on 2027-11-12T13:14:15.000Z, session sess_ZyXwVu987654", "/b/other"))).toBeNull();
    expect(firstDifference(at("rm 3 files", "/a"), at("rm 4 files", "/a"))).toBe('request.messages[0].content: differs at character 3: recorded "rm 3 files", now "rm 4 files"');
    expect(firstDifference({ tools: [{ name: "bash" }] }, { tools: [] })).toBe("request.tools: recorded 1 items, now 0");
    expect(firstDifference({ maxTokens: 5 }, {})).toBe("request.maxTokens: recorded 5, now absent");
  });

  it("refuses a recording it cannot read with CONFIG_ERROR naming the line", async () => {
    spare = tmpWorkspace();
    const recording = join(spare.root, "bad.jsonl");
    writeFileSync(recording, '{"workspace":"/w","request":{"modelKey":"m","messages":[]},"response":{"model":"m","message":{"content":"x","thinking":null,"toolCalls":[]},"finishReason":"stop","usage":{}}}\nnot json\n');
    await expect(createRuntimeHarness({ env: { VEIL_REPLAY: recording } })).rejects.toMatchObject({ code: "CONFIG_ERROR", message: expect.stringContaining("line 2 of") });
  });
});

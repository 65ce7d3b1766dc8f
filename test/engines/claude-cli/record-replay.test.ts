/**
 * CLAUDE ENGINE TESTS: VEIL_RECORD and VEIL_REPLAY on cc/ turns (real Claude Agent SDK and
 * `claude` binary; recorded against the fake Anthropic server, replayed with it shut down).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { message } from "../../helpers/fake-anthropic.js";
import { tmpWorkspace, type TempWorkspace } from "../../helpers/workspace.js";
import { createEngineHarness, type EngineHarness } from "./harness.js";

const KEY = "sk-ant-w31-recording-must-not-hold-this";

let h: EngineHarness | undefined;
let spare: TempWorkspace | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  spare?.cleanup();
  spare = undefined;
});

/** The session's stored history, its workspace path put as <workspace> (each run has its own). */
async function rows(harness: EngineHarness) {
  const messages = await harness.store.listMessages(harness.sessionId);
  const calls = await harness.store.listToolCalls(harness.sessionId);
  const text = JSON.stringify({
    messages: messages.map((m) => ({ role: m.role, content: m.content, thinking: m.thinking, tool_calls: m.tool_calls, tool_call_id: m.tool_call_id, finish_reason: m.finish_reason, token_usage: m.token_usage })),
    calls: calls.map((c) => ({ id: c.id, name: c.name, state: c.state, arguments: c.arguments })),
  });
  return JSON.parse(text.split(harness.ws.root).join("<workspace>"));
}

const FILES = { "readme.md": "# hello\n" };

/** Records a three-call, four-tool session; returns the recording's path and the rows it left. */
async function recordSession(prompt: string) {
  spare = tmpWorkspace();
  const recording = join(spare.root, "cc-session.jsonl");
  h = await createEngineHarness({ files: FILES, claudeCli: { apiKey: KEY }, env: { VEIL_RECORD: recording } });
  h.api.enqueue(
    message().thinking("look first").tool("mcp__veil__write_file", { file: "notes.txt", content: "alpha\nbeta\n" }).tool("mcp__veil__glob", { pattern: "*.md" }).usage({ input_tokens: 120, output_tokens: 30 }).stop(),
    message().tool("mcp__veil__bash", { command: "wc -l notes.txt" }).tool("mcp__veil__read_file", { file: "readme.md" }).stop(),
    message().text("notes.txt has 2 lines.", 1).usage({ input_tokens: 400, output_tokens: 12, cache_read_input_tokens: 300 }).stop(),
  );
  const outcome = await h.turn(prompt);
  expect(outcome.error).toBeUndefined();
  expect(outcome.stopReason).toBe("stop");
  const recorded = { recording, rows: await rows(h), content: outcome.result.content, workspace: h.ws.root, requests: h.api.messageRequests.length };
  await h.close();
  h = undefined;
  return recorded;
}

/** A harness with no key and its fake Anthropic server shut down: nothing can answer but the recording. */
async function replayHarness(recording: string): Promise<EngineHarness> {
  const harness = await createEngineHarness({ files: FILES, claudeCli: { apiKey: undefined }, env: { VEIL_REPLAY: recording } });
  await harness.api.close();
  return harness;
}

describe("claude-cli engine: VEIL_RECORD and VEIL_REPLAY", () => {
  it("records a multi-tool session through the proxy and replays it with no server and no key: the same rows", async () => {
    const recorded = await recordSession("tidy the notes");
    const text = readFileSync(recorded.recording, "utf8");
    const lines = text.trim().split("\n").map((line) => JSON.parse(line));
    expect(lines).toHaveLength(recorded.requests);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({ workspace: recorded.workspace, wire: "anthropic", request: { method: "POST", path: "/v1/messages", body: { model: "claude-test", stream: true } }, response: { status: 200, contentType: "text/event-stream" } });
    expect(JSON.stringify(lines[0].request.body.messages)).toContain("tidy the notes");
    expect(lines[0].response.body).toContain("event: message_stop");
    expect(lines[2].response.body).toContain("notes.txt has 2 lines.");
    // Neither the key nor any header is recorded; metadata (the machine's device id) neither.
    expect(text).not.toContain(KEY);
    expect(text).not.toContain("x-api-key");
    expect(lines[0].request.body.metadata).toBeUndefined();

    h = await replayHarness(recorded.recording);
    const outcome = await h.turn("tidy the notes");
    expect(outcome.error).toBeUndefined();
    expect(outcome.stopReason).toBe("stop");
    expect(outcome.result.content).toBe(recorded.content);
    expect(await rows(h)).toEqual(recorded.rows);
    expect(readFileSync(h.ws.path("notes.txt"), "utf8")).toBe("alpha\nbeta\n");
    expect(h.api.requests).toHaveLength(0);
  });

  it("fails a turn whose request is not the recorded one with REPLAY_MISMATCH naming the difference", async () => {
    const recorded = await recordSession("tidy the notes");
    h = await replayHarness(recorded.recording);
    const outcome = await h.turn("tidy the files");
    expect(outcome.stopReason).toBe("error");
    expect(outcome.error?.code).toBe("REPLAY_MISMATCH");
    expect(outcome.error?.message).toContain(`model call 1 differs from the recorded exchange on line 1 of ${recorded.recording}: request.body.messages[0].content`);
    expect(outcome.error?.message).toContain('recorded "tidy the notes", now "tidy the files"');
    expect(outcome.result.error?.code).toBe("REPLAY_MISMATCH");
  });
});

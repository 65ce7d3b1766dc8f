import { afterEach, describe, expect, it } from "vitest";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { openVeil, type Veil, type VeilEvent } from "../src/index.js";
import { reply, startFakeLlm, type FakeLlm } from "./helpers/fake-llm.js";
import { tmpWorkspace, type TempWorkspace } from "./helpers/workspace.js";

let veil: Veil | undefined;
let llm: FakeLlm | undefined;
let ws: TempWorkspace | undefined;
afterEach(async () => {
  await veil?.close();
  await llm?.close();
  ws?.cleanup();
  veil = llm = ws = undefined;
});

/** A fake model on loopback and a workspace opened in process against it. */
async function openWithFakeModel(): Promise<{ llm: FakeLlm; veil: Veil }> {
  const model = await startFakeLlm();
  ws = tmpWorkspace();
  mkdirSync(join(ws.root, "home"));
  const opened = await openVeil({ workspace: ws.root, env: { VEIL_BASE_URL: model.baseUrl, VEIL_API_KEY: "sk", VEIL_MODEL: "fake-model", VEIL_HOME: join(ws.root, "home") } });
  return { llm: model, veil: opened };
}

describe("openVeil (in-process API)", () => {
  it("creates a session, runs turns with their events, and keeps the history in the workspace's store", async () => {
    ({ llm, veil } = await openWithFakeModel());
    const session = await veil.createSession();
    expect(session).toMatchObject({ agent: "default", status: "idle" });
    llm.enqueue(reply().tool("bash", { command: "echo in-process" }).stop(), reply().text("ran it").stop());
    const events: VeilEvent[] = [];
    const result = await veil.chat(session.id, "run something", { onEvent: (e) => events.push(e) });
    expect(result).toMatchObject({ content: "ran it", stopReason: "stop" });
    expect(events.find((e) => e.type === "tool.end")).toMatchObject({ toolName: "bash", success: true });
    expect((events.find((e) => e.type === "tool.end") as { output: string }).output).toContain("in-process");
    llm.enqueue(reply().text("second").stop());
    expect((await veil.chat(session.id, "again")).content).toBe("second");
    expect(llm.completionRequests.at(-1)!.body.messages.filter((m: { role: string }) => m.role === "user")).toHaveLength(2);
    const stored = await veil.runtime.store.listMessages(session.id);
    expect(stored.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["run something", "again"]);
  });

  it("chat with outputSchema returns the parsed answer in structured, repairs a wrong one, and refuses a bad schema before sending", async () => {
    ({ llm, veil } = await openWithFakeModel());
    const session = await veil.createSession();
    const outputSchema = { type: "object", properties: { count: { type: "integer" } }, required: ["count"], additionalProperties: false };
    // The first answer does not match (a string); the repair request names what is wrong and gets a match.
    llm.enqueue(reply().text('{"count":"three"}').stop(), reply().text('{"count":3}').stop());
    const result = await veil.chat(session.id, "how many?", { outputSchema });
    expect(result.structured).toEqual({ count: 3 });
    expect(llm.completionRequests).toHaveLength(2);
    expect(JSON.stringify(llm.completionRequests[1]!.body.messages.at(-1))).toContain("count");
    const sent = llm.completionRequests.length;
    const refused = await veil.chat(session.id, "again", { outputSchema: { type: "no-such-type" } }).catch((error: { code?: string }) => error.code);
    expect(refused).toBe("VALIDATION_ERROR");
    expect(llm.completionRequests).toHaveLength(sent);
  });
});

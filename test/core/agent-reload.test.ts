import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { AGENTS_RECHECK_MS } from "../../src/runtime.js";
import { reply } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** The system prompt the model got in a new session of `agent`'s first turn. */
async function systemPromptOfNewSession(h: RuntimeHarness, agent: string): Promise<string> {
  const before = h.llm.completionRequests.length;
  const session = await h.runtime.sessions.create({ agent });
  await (await h.runtime.sessions.send(session.id, "hello")).result;
  return h.llm.completionRequests[before]!.body.messages[0].content as string;
}

describe("agent folders edited while the runtime runs", () => {
  it("sees an edited AGENT.md in sessions started a recheck interval later, and looks no more often", async () => {
    const clock = new ManualClock();
    h = await createRuntimeHarness({ clock, files: { ".veil/agents/editor/agent.json": JSON.stringify({ description: "edits" }), ".veil/agents/editor/AGENT.md": "First prompt." } });
    h.llm.respond(() => reply().text("hi").stop());
    expect(await systemPromptOfNewSession(h, "editor")).toMatch(/^First prompt\./);

    h.ws.write(".veil/agents/editor/AGENT.md", "Second prompt, a longer one.");
    // Within the interval the last look stands: a burst of sessions stats the folders once.
    await clock.advance(AGENTS_RECHECK_MS - 1);
    expect(await systemPromptOfNewSession(h, "editor")).toMatch(/^First prompt\./);
    await clock.advance(1);
    expect(await systemPromptOfNewSession(h, "editor")).toMatch(/^Second prompt, a longer one\./);
    expect(h.runtime.agents().editor!.description).toBe("edits");
  });

  it("sees a new agent folder in the very next session, without waiting for the interval", async () => {
    const clock = new ManualClock();
    h = await createRuntimeHarness({ clock });
    h.llm.respond(() => reply().text("hi").stop());
    expect(await systemPromptOfNewSession(h, "default")).toBeTypeOf("string");
    h.ws.write(".veil/agents/late/agent.json", JSON.stringify({ description: "added later" }));
    h.ws.write(".veil/agents/late/AGENT.md", "You arrived late.");
    expect(await systemPromptOfNewSession(h, "late")).toMatch(/^You arrived late\./);
    h.ws.write(".veil/agents/scheduled/agent.json", JSON.stringify({ description: "for a schedule" }));
    expect(await h.runtime.schedules.create({ agent: "scheduled", prompt: "x", cron: "0 0 1 1 *" })).toMatchObject({ agent: "scheduled" });
  });
});

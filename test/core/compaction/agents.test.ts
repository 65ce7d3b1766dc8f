/** Sub-agents across a compaction: a worker's reply reaches a boss whose history was compacted. */
import { afterEach, describe, expect, it } from "vitest";
import { agentMessage } from "../../../src/core/agents/tools/agent-message.js";
import { agentSpawn } from "../../../src/core/agents/tools/agent-spawn.js";
import { SUMMARY_SYSTEM_PROMPT } from "../../../src/core/compaction/index.js";
import { reply, type FakeRequest } from "../../helpers/fake-llm.js";
import { textOf } from "../../helpers/history.js";
import { createAgentsHarness, lastMessage, systemPrompt, tag, type AgentsHarness } from "../agents/harness.js";

let h: AgentsHarness;
afterEach(async () => h?.close());

const isSummaryRequest = (req: FakeRequest) => systemPrompt(req) === SUMMARY_SYSTEM_PROMPT;

describe("sub-agents across a compaction", () => {
  it("a worker's async reply starts a boss turn after the boss was compacted: summary, then the wrapped reply", async () => {
    h = await createAgentsHarness({ files: { "notes/a.txt": textOf(1500, "a"), "notes/b.txt": textOf(1500, "b") } });
    h.router.route(isSummaryRequest, () => reply().text("## Goal\nCoordinate the worker.\n## Next steps\n1. Wait for its report.").stop());
    const boss = await h.bossSession();
    h.boss.enqueue(reply().tool("read_file", { file: "notes/a.txt" }).stop(), reply().tool("read_file", { file: "notes/b.txt" }).stop(), reply().text("read both").stop());
    await (await h.runtime.sessions.send(boss, "read the notes, then ask the worker")).result;

    const spawned = await h.call(agentSpawn, boss, { agent: "worker", instance_name: "w", objective: "OBJ-compact" });
    expect(spawned.success).toBe(true);
    const worker = tag(spawned.output, "session-id")!;

    const outcome = await h.runtime.sessions.compact(boss);
    expect(outcome.summaryMessageId).not.toBeNull();
    expect(outcome.tokensAfter).toBeLessThan(outcome.tokensBefore);

    h.worker("OBJ-compact").enqueue(reply().text("report ready").stop());
    h.boss.enqueue(reply().text("thanks, noted").stop());
    const bossDone = h.nextDone(boss);
    await h.call(agentMessage, boss, { sessionId: worker, message: "report please", async_inform: true });
    expect(await bossDone).toMatchObject({ content: "thanks, noted" });

    const bossRequests = h.llm.completionRequests.filter((r) => systemPrompt(r).startsWith("ROLE=boss"));
    const last = bossRequests.at(-1)!;
    expect(last.body.messages[1].content).toMatch(/^<summary>[\s\S]*Coordinate the worker/);
    expect(lastMessage(last)).toBe(`[Message from worker (session: ${worker})]: report ready`);
    expect(JSON.stringify(last.body.messages)).not.toContain(textOf(1500, "a"));
  });
});

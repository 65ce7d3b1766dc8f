import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reply } from "../helpers/fake-llm.js";
import { answer, chat, clusterHarness, eventually, post, sessionRows, watch } from "../helpers/cluster.js";

const cluster = clusterHarness("cluster/inbox-boundary.test");

describe.skipIf(!!cluster.unavailable)("a message sent to another node mid-run", () => {
  it("reaches the owner's run at its next boundary (the inbox signal marks it unread there)", async () => {
    const [a, b] = await cluster.start(2);
    const session = await post(a!, "/sessions");
    cluster.llm().enqueue(reply().text("owned").stop());
    await chat(a!, session.id, "take it");
    // Two tool steps: the message lands during the first, so the second step's request carries it.
    // The first ends once B's message is queued (a flag, not a timer: B may be slow on a busy
    // machine); A learns of it from the inbox signal, not from a read before the boundary.
    const { url, workspace } = cluster.where();
    const flag = join(workspace, "queued.flag");
    cluster.llm().enqueue(reply().tool("bash", { command: `while [ ! -f ${flag} ]; do sleep 0.02; done; echo released` }).stop(), reply().tool("bash", { command: "true" }).stop(), reply().text("seen").stop());
    const started = await watch(a!, (d) => d.type === "tool.start" && d.sessionId === session.id);
    const running = answer(a!.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "run it" }) }));
    await started.done;
    const before = cluster.llm().completionRequests.length;
    const fromB = answer(b!.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "sent to B" }) }));
    await eventually(async () => ((await sessionRows(url, session.id)).inbox ?? []).length === 1, "B's message in the inbox");
    writeFileSync(flag, "");
    expect((await running).body.content).toBe("seen");
    expect((await fromB).body.content).toBe("seen");
    const after = cluster.llm().completionRequests.slice(before);
    // The model call right after the first tool's result already sees B's message: same run, next boundary.
    expect(after).toHaveLength(2);
    const contents = (after[0]!.body.messages as { role: string; content: unknown }[]).map((m) => [m.role, typeof m.content === "string" ? m.content : JSON.stringify(m.content)]);
    expect(contents.at(-1)).toEqual(["user", expect.stringContaining("sent to B")]);
    expect(contents.at(-2)?.[0]).toBe("tool");
  }, 60_000);
});

import { describe, expect, it } from "vitest";
import { chat, clusterFile, clusterUnavailable, eventually, logLine, messages, post, reply, sessionRows, watch, type ClusterNodes } from "../helpers/cluster-nodes.js";

const file = clusterFile("fencing.test");


describe.skipIf(!!clusterUnavailable)("fencing: an owner that paused and lost its lease", () => {
  it("writes nothing more of the session after the takeover, stops its run, and stays healthy for other sessions", async () => {
    const cluster = await file.start(2);
    const [a, b] = cluster.nodes as [NonNullable<ClusterNodes["nodes"][0]>, NonNullable<ClusterNodes["nodes"][0]>];
    const { llm, url } = cluster;
    const session = await post(a, "/sessions");
    // B's run: a tool that outlives the pause; the model would be asked again once it returns.
    llm.enqueue(reply().tool("bash", { command: "sleep 3; echo finished late" }).stop());
    const toolStarted = await watch(a, (d) => d.type === "tool.start" && d.sessionId === session.id);
    const cut = b.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "run it" }) }).catch(() => undefined);
    await toolStarted.done; // B owns the session and is inside the tool
    b.child.kill("SIGSTOP");

    // A takes the session over once B's 2 s lease runs out: the cut call gets its placeholder.
    await eventually(async () => (await messages(a, session.id)).some((m: any) => m.role === "tool"), "A's takeover");
    llm.enqueue(reply().text("back on A").stop());
    expect((await chat(a, session.id, "are you there?")).content).toBe("back on A");
    const before = await sessionRows(url, session.id);
    const requestsBefore = llm.completionRequests.length;

    b.child.kill("SIGCONT");
    // B finds out (its heartbeat, or its first refused write), stops the run and its shell.
    await logLine(b, /session moved to another node/);
    expect(b.stderr()).toMatch(/lease lost: the run of this session stops here/);
    // The late tool result and everything after it were refused: the rows are A's alone.
    expect(await sessionRows(url, session.id)).toEqual(before);
    expect(llm.completionRequests.length).toBe(requestsBefore);
    const cutAnswer = await cut;
    if (cutAnswer) expect(cutAnswer.status).toBeGreaterThanOrEqual(200);

    // B serves other sessions as before.
    const other = await post(b, "/sessions");
    llm.enqueue(reply().text("B is fine").stop());
    expect((await chat(b, other.id, "hello")).content).toBe("B is fine");
    expect(await sessionRows(url, session.id)).toEqual(before);
    // And the session carries on at A, wherever the chat is sent.
    llm.enqueue(reply().text("still A").stop());
    expect((await chat(b, session.id, "who runs this?")).content).toBe("still A");
    const rows = await messages(a, session.id);
    expect(rows.filter((m: any) => m.role === "assistant").map((m: any) => m.content)).toEqual([null, "back on A", "still A"]);
    const tools = rows.filter((m: any) => m.role === "tool");
    expect(tools).toHaveLength(1);
    expect(tools[0].meta.placeholder).toBe(true);
    expect(tools[0].content).not.toContain("finished late");
  }, 90_000);
});

describe.skipIf(!!clusterUnavailable)("takeover of a killed node's sessions", () => {
  it("re-arms the wake-up the dead node scheduled, and it fires once, on the node that took over", async () => {
    const cluster = await file.start(2);
    const [a, b] = cluster.nodes as [NonNullable<ClusterNodes["nodes"][0]>, NonNullable<ClusterNodes["nodes"][0]>];
    const { llm } = cluster;
    const session = await post(a, "/sessions");
    // Armed on B after A started: A never read this schedule at its start.
    llm.enqueue(reply().tool("schedule_wakeup", { time: "3s", message: "wake up now" }).stop(), reply().text("armed").stop());
    expect((await chat(b, session.id, "set a timer")).content).toBe("armed");
    const woken = await watch(a, (d) => d.type === "chat.done" && d.sessionId === session.id && d.content === "woken");
    llm.enqueue(reply().text("woken").stop());
    await b.kill();
    await woken.done;
    await logLine(a, /took over a session/);
    const rows = await messages(a, session.id);
    expect(rows.filter((m: any) => m.role === "user" && m.content === "wake up now")).toHaveLength(1);
    expect(llm.completionRequests).toHaveLength(3);
    // A one-shot schedule is gone once it fired.
    expect((await (await a.fetch(`/sessions/${session.id}/wakeup`)).json()).wakeup).toBeNull();
  }, 90_000);
});

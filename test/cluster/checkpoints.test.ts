/**
 * Revert, unrevert and fork sent to a node that does not run the session are done by the
 * node that runs it, on two nodes over a real PostgreSQL and one workspace.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { reply } from "../helpers/fake-llm.js";
import { answer, chat, clusterHarness, json, messages, post } from "../helpers/cluster.js";
import type { SpawnedServer } from "../helpers/spawned-server.js";

const cluster = clusterHarness("cluster/checkpoints.test");

/** Long names, so the list of reverted files is longer than one signal can carry. */
const MANY = Array.from({ length: 150 }, (_, i) => `generated-output-file-with-a-long-name-${String(i).padStart(3, "0")}.txt`);

/** One turn on `node`: the model runs `command` in bash, then says done. */
async function bashTurn(node: SpawnedServer, id: string, message: string, command: string): Promise<void> {
  cluster.llm().enqueue(reply().tool("bash", { command }).stop(), reply().text("done").stop());
  await chat(node, id, message);
}

const userIds = async (node: SpawnedServer, id: string): Promise<string[]> => (await messages(node, id)).filter((m: any) => m.role === "user").map((m: any) => m.id);

const homes: string[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

describe.skipIf(!!cluster.unavailable)("checkpoints across nodes", () => {
  it("revert, unrevert and fork sent to a non-owner run on the owner, whose next turn records only its own changes", async () => {
    const [a] = await cluster.start(1);
    // B keeps its own copy of the workspace's state (another machine's home): only the owner's tracker knows what A's turns saw.
    const home = mkdtempSync(join(tmpdir(), "veil-node-b-"));
    homes.push(home);
    const b = await cluster.spawn({ VEIL_HOME: home, HOME: home });
    const { workspace } = cluster.where();
    const session = await post(a!, "/sessions");
    await bashTurn(a!, session.id, "first", "echo one > kept.txt");
    await bashTurn(a!, session.id, "second", `for f in ${MANY.join(" ")}; do echo x > $f; done`);
    const [first, second] = await userIds(a!, session.id);

    const reverted = await answer(b!.fetch(`/sessions/${session.id}/revert`, { method: "POST", body: JSON.stringify({ messageId: second }) }));
    expect(reverted.status).toBe(200);
    // The whole answer crossed from the owner (in pieces: it is longer than one NOTIFY payload).
    expect(reverted.body).toEqual({ messageId: second, files: MANY.map((path) => ({ path, change: "added" })) });
    expect(MANY.filter((f) => existsSync(join(workspace, f)))).toEqual([]);

    const unreverted = await answer(b!.fetch(`/sessions/${session.id}/unrevert`, { method: "POST", body: "{}" }));
    expect(unreverted.status).toBe(200);
    expect(unreverted.body.files).toHaveLength(MANY.length);
    expect(MANY.every((f) => existsSync(join(workspace, f)))).toBe(true);
    expect((await answer(b!.fetch(`/sessions/${session.id}/revert`, { method: "POST", body: JSON.stringify({ messageId: second }) }))).status).toBe(200);
    // The owner's error crosses as it is.
    expect(await answer(b!.fetch(`/sessions/${session.id}/revert`, { method: "POST", body: JSON.stringify({ messageId: "msg_none" }) }))).toMatchObject({ status: 404, body: { error: { code: "NOT_FOUND" } } });

    // The owner put the files back itself, so its next turn does not take the revert for a change of that turn.
    await bashTurn(a!, session.id, "third", "echo two > next.txt");
    const { checkpoints } = await json(a!.fetch(`/sessions/${session.id}/checkpoints`));
    expect(checkpoints.map((c: any) => c.files)).toEqual([[{ path: "kept.txt", change: "added" }], [{ path: "next.txt", change: "added" }]]);

    const forked = await answer(b!.fetch(`/sessions/${session.id}/fork`, { method: "POST", body: JSON.stringify({ messageId: first }) }));
    expect(forked).toMatchObject({ status: 201, body: { forked_from: session.id, agent: session.agent } });
    const copied = await messages(b!, forked.body.id);
    expect(copied.filter((m: any) => m.role === "user").map((m: any) => m.content)).toEqual(["first"]);
    expect(copied.at(-1)).toMatchObject({ role: "assistant", content: "done" });
  }, 90_000);
});

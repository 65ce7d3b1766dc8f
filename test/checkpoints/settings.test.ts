import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { bash, checkpoints, json, seedWorkspace, text, turn, userMessageIds } from "./helpers.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** The tracker states (mirror copies) under Veil's home, one folder per workspace. */
const mirrors = (h: RuntimeHarness) => {
  const dir = join(h.env.VEIL_HOME!, "checkpoints");
  return existsSync(dir) ? readdirSync(dir) : [];
};

describe("turning checkpoints off", () => {
  it("settings checkpoints.enabled false: no checkpoints, no mirror copy under Veil's home, revert answers CONFIG_ERROR", async () => {
    h = await createRuntimeHarness({ settings: { checkpoints: { enabled: false } } });
    const server = await h.serve();
    seedWorkspace(h.ws.root);
    const { id } = await json(await server.fetch("/sessions", { method: "POST", body: "{}" }), 201);
    await turn(h, server, id, "change a file", [[bash("echo changed > a.txt")]]);
    expect(text(h.ws.root, "a.txt")).toBe("changed\n");
    expect((await checkpoints(server, id)).checkpoints).toEqual([]);
    expect(mirrors(h)).toEqual([]);
    const [m1] = await userMessageIds(server, id);
    const refused = await server.fetch(`/sessions/${id}/revert`, { method: "POST", body: JSON.stringify({ messageId: m1 }) });
    expect(refused.status).toBe(400);
    expect((await refused.json()).error.code).toBe("CONFIG_ERROR");
    expect(text(h.ws.root, "a.txt")).toBe("changed\n");
  });

  it("agent.json checkpoints.enabled false: that agent's turns leave none, another agent's still do", async () => {
    h = await createRuntimeHarness({ files: { ".veil/agents/quiet/agent.json": JSON.stringify({ checkpoints: { enabled: false } }) } });
    const server = await h.serve();
    seedWorkspace(h.ws.root);
    const quiet = await json(await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "quiet" }) }), 201);
    await turn(h, server, quiet.id, "quiet change", [[bash("echo quiet > q.txt")]]);
    expect((await checkpoints(server, quiet.id)).checkpoints).toEqual([]);
    // No baseline was taken for the quiet agent: nothing mirrored yet.
    expect(mirrors(h)).toEqual([]);
    const loud = await json(await server.fetch("/sessions", { method: "POST", body: "{}" }), 201);
    await turn(h, server, loud.id, "loud change", [[bash("echo loud > l.txt")]]);
    expect((await checkpoints(server, loud.id)).checkpoints.map((c) => c.files)).toEqual([[{ path: "l.txt", change: "added" }]]);
    expect(mirrors(h)).toHaveLength(1);
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

describe("memory endpoints", () => {
  it("PUT overwrites literally and atomically; GET returns the text; agent scope has its own file", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const put = await server.fetch("/memory/MEMORY.md", { method: "PUT", body: "## note\nsame\n", headers: { "content-type": "text/plain" } });
    expect(put.status).toBe(200);
    // Literal overwrite: no dedup, no empty guard (unlike memory_write).
    await server.fetch("/memory/MEMORY.md", { method: "PUT", body: "## note\nsame\n", headers: { "content-type": "text/plain" } });
    const got = await server.fetch("/memory/MEMORY.md");
    expect(await got.text()).toBe("## note\nsame\n");
    const empty = await server.fetch("/memory/MEMORY.md", { method: "PUT", body: JSON.stringify({ content: "" }) });
    expect(empty.status).toBe(200);
    expect(readFileSync(join(h.ws.root, ".veil/memory/MEMORY.md"), "utf8")).toBe("");

    const agentPut = await server.fetch("/agents/default/memory/MEMORY.md", { method: "PUT", body: JSON.stringify({ content: "agent fact" }) });
    expect(agentPut.status).toBe(200);
    expect(readFileSync(join(h.ws.root, ".veil/memory/agents/default/MEMORY.md"), "utf8")).toBe("agent fact");
    const agentGet = await server.fetch("/agents/default/memory/MEMORY.md", { headers: { accept: "application/json" } });
    expect(await agentGet.json()).toMatchObject({ content: "agent fact", agent: "default" });
    expect((await server.fetch("/memory/OTHER.md")).status).toBe(404);
  });

  it("refuses names that would reach outside the memory folder", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    for (const path of ["/memory/..%2Fsecret", "/memory/%2e%2e", "/memory/a%2Fb", "/memory/%00x", "/agents/..%2F..%2Fx/memory/MEMORY.md", "/agents/a%5Cb/memory/MEMORY.md", "/memory/.hidden"]) {
      const res = await server.fetch(path, { method: "PUT", body: "x", headers: { "content-type": "text/plain" } });
      expect([400, 404], path).toContain(res.status);
      if (res.status === 400) expect((await res.json()).error.code).toBe("VALIDATION_ERROR");
    }
    expect(existsSync(join(h.ws.root, ".veil/secret"))).toBe(false);
    expect(existsSync(join(h.ws.root, "x"))).toBe(false);
    const bad = await server.fetch("/memory/MEMORY.md", { method: "PUT", body: "{oops", headers: { "content-type": "application/json" } });
    expect(bad.status).toBe(400);
  });
});

import { afterEach, describe, expect, it, vi } from "vitest";
import { reply } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Everything a streamed answer sends until its body ends. */
async function bodyText(res: Response): Promise<string> {
  return await res.text();
}

describe("streamed answers of the OpenAI wire and keys", () => {
  it("a key's streamed agent/<name> and proxied answers end, after a comment saying why, when the key is revoked; another key's goes on", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const keyOf = async (name: string) => (await (await server.fetch("/keys", { method: "POST", body: JSON.stringify({ name, scopes: ["chat"] }) })).json()) as { id: string; key: string };
    const [alice, bob] = [await keyOf("alice"), await keyOf("bob")];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    h.llm.respond(() => reply().text("partial ").waitFor(held).text("rest").stop());
    const ask = (key: string, model: string) =>
      server.fetch("/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${key}` }, body: JSON.stringify({ model, stream: true, messages: [{ role: "user", content: "hi" }] }) });

    const [bobAgent, bobProxied, aliceAgent] = await Promise.all([ask(bob.key, "agent/default"), ask(bob.key, "fake-model"), ask(alice.key, "agent/default")]);
    for (const res of [bobAgent, bobProxied, aliceAgent]) expect([res.status, res.headers.get("content-type")]).toEqual([200, "text/event-stream; charset=utf-8"]);
    await h.llm.waitForRequests(3);
    const bobEnds = [bodyText(bobAgent), bodyText(bobProxied)];
    const aliceEnd = bodyText(aliceAgent);
    expect(h.runtime.keys.watchedKeys).toBe(2);

    expect((await server.fetch(`/keys/${bob.id}`, { method: "DELETE" })).status).toBe(200);
    // Both of bob's answers end while the model is still held: no [DONE], a last line saying why.
    for (const text of await Promise.all(bobEnds)) {
      expect(text).not.toContain("[DONE]");
      expect(text.trimEnd().split("\n").at(-1)).toMatch(/^: closed: key "[^"]+" was revoked/);
    }
    // Alice's answer goes on to its end.
    release();
    const text = await aliceEnd;
    expect(text.trimEnd().split("\n").at(-1)).toBe("data: [DONE]");
    const content = text
      .split("\n")
      .filter((line) => line.startsWith("data: {"))
      .map((line) => JSON.parse(line.slice(6)).choices[0]?.delta?.content ?? "")
      .join("");
    expect(content).toBe("partial rest");
    await vi.waitFor(() => expect(h!.runtime.keys.watchedKeys).toBe(0));
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { STREAM_RECONNECT_MS, StreamTokens } from "../../src/core/stream-tokens.js";
import { reply } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { readSse } from "../helpers/sse-client.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("StreamTokens", () => {
  it("opens new streams for 60 s; a stream it opened reconnects for 24 h after that first use", async () => {
    const clock = new ManualClock();
    const tokens = new StreamTokens(clock);
    const { token } = tokens.mint();
    expect(tokens.verify(token, "/sessions/a/events")).toBe(true);
    await clock.advance(61_000);
    expect(tokens.verify(token, "/sessions/a/events")).toBe(true);
    expect(tokens.verify(token, "/sessions/b/events")).toBe(false);
    await clock.advance(STREAM_RECONNECT_MS - 62_000);
    expect(tokens.verify(token, "/sessions/a/events")).toBe(true);
    await clock.advance(2_000);
    expect(tokens.verify(token, "/sessions/a/events")).toBe(false);
    expect(tokens.size()).toBe(0);
  });

  it("a token never used expires after its minute; revoke and revokeAll end tokens at once", async () => {
    const clock = new ManualClock();
    const tokens = new StreamTokens(clock);
    const unused = tokens.mint();
    await clock.advance(60_000);
    expect(tokens.verify(unused.token, "/events")).toBe(false);
    const a = tokens.mint();
    const b = tokens.mint();
    expect(tokens.verify(a.token, "/events")).toBe(true);
    expect(tokens.revoke(a.token)).toBe(true);
    expect(tokens.revoke(a.token)).toBe(false);
    expect(tokens.verify(a.token, "/events")).toBe(false);
    expect(tokens.verify(b.token, "/events")).toBe(true);
    expect(tokens.revokeAll()).toBe(1);
    expect(tokens.verify(b.token, "/events")).toBe(false);
  });
});

describe("EventSource-style reconnects over HTTP with a stream token", () => {
  it("a stream opened with a token reconnects past 60 s with Last-Event-ID and replays what it missed; revoking ends it", async () => {
    const clock = new ManualClock(Date.parse("2026-01-01T00:00:00Z"));
    h = await createRuntimeHarness({ clock });
    const server = await h.serve();
    const session = await h.runtime.sessions.create({ agent: "default" });
    const path = `/sessions/${session.id}/events`;
    const { token } = (await (await server.fetch("/stream-tokens", { method: "POST" })).json()) as { token: string };

    // First connection (no Authorization header, as a browser's EventSource) sees the first turn.
    const first = await fetch(`${server.url}${path}?token=${token}`);
    expect(first.status).toBe(200);
    h.llm.enqueue(reply().text("one").stop());
    const [seen] = await Promise.all([
      readSse(first, { until: (m) => m.data?.type === "chat.done" }),
      (await h.runtime.sessions.send(session.id, "first")).result,
    ]);
    const lastId = Number(seen.filter((m) => m.id !== undefined).at(-1)!.id);

    // Disconnected; a second turn runs meanwhile; the browser retries after the token's minute.
    h.llm.enqueue(reply().text("two").stop());
    await (await h.runtime.sessions.send(session.id, "second")).result;
    await clock.advance(61_000);
    const again = await fetch(`${server.url}${path}?token=${token}`, { headers: { "last-event-id": String(lastId) } });
    expect(again.status).toBe(200);
    const replayed = await readSse(again, { until: (m) => m.data?.type === "chat.done" });
    expect(replayed.every((m) => m.id === undefined || Number(m.id) > lastId)).toBe(true);
    expect(replayed.find((m) => m.data?.type === "chat.done")?.data).toMatchObject({ content: "two" });

    // Past the minute the token opens no other stream; the bearer secret alone can revoke it.
    expect((await fetch(`${server.url}/events?token=${token}`)).status).toBe(401);
    expect((await fetch(`${server.url}/stream-tokens/${token}?token=${token}`, { method: "DELETE" })).status).toBe(401);
    const revoked = await server.fetch(`/stream-tokens/${token}`, { method: "DELETE" });
    expect(await revoked.json()).toEqual({ revoked: true });
    expect((await fetch(`${server.url}${path}?token=${token}`)).status).toBe(401);
  });

  it("DELETE /stream-tokens revokes every token (log-out); 24 h after first use a reconnect is refused", async () => {
    const clock = new ManualClock(Date.parse("2026-01-01T00:00:00Z"));
    h = await createRuntimeHarness({ clock });
    const server = await h.serve();
    const mint = async () => ((await (await server.fetch("/stream-tokens", { method: "POST" })).json()) as { token: string }).token;
    const open = async (token: string) => {
      const res = await fetch(`${server.url}/events?token=${token}`);
      await res.body?.cancel();
      return res.status;
    };
    const a = await mint();
    const b = await mint();
    expect(await open(a)).toBe(200);
    expect(await open(b)).toBe(200);
    expect(await (await server.fetch("/stream-tokens", { method: "DELETE" })).json()).toEqual({ revoked: 2 });
    expect(await open(a)).toBe(401);
    expect(await open(b)).toBe(401);

    const c = await mint();
    expect(await open(c)).toBe(200);
    await clock.advance(STREAM_RECONNECT_MS - 1);
    expect(await open(c)).toBe(200);
    await clock.advance(1);
    expect(await open(c)).toBe(401);
  });
});

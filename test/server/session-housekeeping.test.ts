import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { loadConfig } from "../../src/config/load.js";
import type { VeilError } from "../../src/errors.js";
import { tmpWorkspace } from "../helpers/workspace.js";
import type { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { reply } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const DAY = 86_400_000;
type Row = { id: string; title: string | null; status: string; origin: string; ephemeral: boolean; updated_at: string; context_window: number };

async function served(options: Parameters<typeof createRuntimeHarness>[0] = {}) {
  h = await createRuntimeHarness(options);
  const server = await h.serve();
  const json = async <T = Row>(path: string, init: RequestInit = {}): Promise<{ status: number; body: T }> => {
    const res = await server.fetch(path, init);
    return { status: res.status, body: (await res.json()) as T };
  };
  return { server, json };
}

/** Moves a session's last activity into the past, in the real SQLite file (as if it had idled since). */
function idleFor(id: string, ms: number): void {
  const db = (h!.runtime.store as SqliteStore).connection;
  db.prepare("UPDATE sessions SET updated_at = ? WHERE id = ?").run(new Date(Date.now() - ms).toISOString(), id);
}

describe("session titles over HTTP", () => {
  it("a title comes from the first message (one line, cut short), or from POST /sessions, and PATCH changes or clears it", async () => {
    const { json } = await served();
    const untitled = (await json("/sessions", { method: "POST", body: "{}" })).body;
    expect(untitled).toMatchObject({ title: null, origin: "api", ephemeral: false, context_window: 128_000 });
    h!.llm.enqueue(reply().text("done").stop(), reply().text("again").stop());
    const first = "Find why the nightly build\n\n  fails on arm64 and fix the flaky network test that times out";
    expect((await json(`/sessions/${untitled.id}/chat`, { method: "POST", body: JSON.stringify({ message: first }) })).status).toBe(200);
    const titled = (await json(`/sessions/${untitled.id}`)).body;
    expect(titled.title).toBe("Find why the nightly build fails on arm64 and fix the…");
    // The second message leaves it alone.
    await json(`/sessions/${untitled.id}/chat`, { method: "POST", body: JSON.stringify({ message: "and another thing" }) });
    expect((await json(`/sessions/${untitled.id}`)).body.title).toBe(titled.title);

    const given = (await json("/sessions", { method: "POST", body: JSON.stringify({ title: "  Release\nnotes  " }) })).body;
    expect(given.title).toBe("Release notes");
    const renamed = await json(`/sessions/${given.id}`, { method: "PATCH", body: JSON.stringify({ title: "Release notes for 0.2" }) });
    expect(renamed).toMatchObject({ status: 200, body: { id: given.id, title: "Release notes for 0.2", updated_at: given.updated_at } });
    expect((await json(`/sessions/${given.id}`, { method: "PATCH", body: JSON.stringify({ title: null }) })).body.title).toBeNull();
    // A rename is announced on the session's stream.
    expect(h!.events.filter((e) => e.type === "session.titled" && e.sessionId === given.id).map((e) => (e as { title: string | null }).title)).toEqual(["Release notes for 0.2", null]);
  });

  it("refuses bad titles and unknown sessions with clear errors, and changes nothing", async () => {
    const { json } = await served();
    const row = (await json("/sessions", { method: "POST", body: JSON.stringify({ title: "Keep me" }) })).body;
    for (const body of [{ title: "   " }, { title: "x".repeat(201) }, { title: 5 }, {}, { title: "ok", agent: "other" }]) {
      const res = await json<{ error: { code: string; message: string } }>(`/sessions/${row.id}`, { method: "PATCH", body: JSON.stringify(body) });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("VALIDATION_ERROR");
    }
    expect((await json("/sessions", { method: "POST", body: JSON.stringify({ title: "\n\t" }) })).status).toBe(400);
    expect((await json<{ error: { code: string } }>("/sessions/sess_nope", { method: "PATCH", body: JSON.stringify({ title: "x" }) })).body.error.code).toBe("SESSION_NOT_FOUND");
    expect((await json(`/sessions/${row.id}`)).body.title).toBe("Keep me");
  });

  it("GET /sessions lists the most recently active first, searches with ?q=, and takes order and limit", async () => {
    const { json } = await served();
    const make = async (title: string) => (await json("/sessions", { method: "POST", body: JSON.stringify({ title }) })).body.id;
    const a = await make("Deploy the staging cluster");
    const b = await make("Write the release notes");
    const c = await make("Review the deploy script");
    h!.llm.enqueue(reply().text("ok").stop());
    await json(`/sessions/${a}/chat`, { method: "POST", body: JSON.stringify({ message: "go" }) });
    const ids = async (query: string) => (await json<Row[]>(`/sessions${query}`)).body.map((r) => r.id);
    expect(await ids("")).toEqual([a, c, b]);
    expect(await ids("?order=created")).toEqual([a, b, c]);
    expect(await ids("?limit=1")).toEqual([a]);
    expect(await ids("?q=DEPLOY")).toEqual([a, c]);
    expect(await ids(`?q=${b.slice(-6)}`)).toEqual([b]);
    expect(await ids("?q=nothing-like-it")).toEqual([]);
    for (const bad of ["?order=sideways", "?limit=0", "?limit=x", "?status=asleep"]) expect((await json(`/sessions${bad}`)).status, bad).toBe(400);
  });
});

describe("closing several sessions at once: POST /sessions/close, DELETE /sessions?ids=", () => {
  it("closes the ids given, each once, in order, and lists the ones that name no session", async () => {
    const { json } = await served();
    const make = async () => (await json("/sessions", { method: "POST", body: "{}" })).body.id;
    const [a, b, keep] = [await make(), await make(), await make()];
    h!.llm.enqueue(reply().tool("bash", { command: "echo started > shell.txt" }).stop(), reply().text("ok").stop());
    await json(`/sessions/${a}/chat`, { method: "POST", body: JSON.stringify({ message: "use the shell" }) });
    const res = await json<{ closed: Row[]; notFound: string[] }>("/sessions/close", { method: "POST", body: JSON.stringify({ ids: [a, "sess_gone", b, a] }) });
    expect(res.status).toBe(200);
    expect(res.body.closed.map((r) => [r.id, r.status])).toEqual([
      [a, "closed"],
      [b, "closed"],
    ]);
    expect(res.body.notFound).toEqual(["sess_gone"]);
    expect((await json(`/sessions/${keep}`)).body.status).toBe("idle");
    expect(h!.events.filter((e) => e.type === "session.state" && (e as { status: string }).status === "closed").map((e) => e.sessionId).sort()).toEqual([a, b].sort());
    // Closed again: still answered, still closed.
    expect((await json<{ closed: Row[] }>("/sessions/close", { method: "POST", body: JSON.stringify({ ids: [a] }) })).body.closed[0]).toMatchObject({ id: a, status: "closed" });
  });

  it("DELETE /sessions?ids= closes the ids named the same way; no ids is refused, never every session", async () => {
    const { json } = await served();
    const make = async () => (await json("/sessions", { method: "POST", body: "{}" })).body.id;
    const [a, b, keep] = [await make(), await make(), await make()];
    const res = await json<{ closed: Row[]; notFound: string[] }>(`/sessions?ids=${a},sess_gone, ${b},${a}`, { method: "DELETE" });
    expect(res.status).toBe(200);
    expect(res.body.closed.map((r) => [r.id, r.status])).toEqual([
      [a, "closed"],
      [b, "closed"],
    ]);
    expect(res.body.notFound).toEqual(["sess_gone"]);
    for (const query of ["", "?ids=", "?ids=,,", `?ids=${Array.from({ length: 1001 }, (_, i) => `s${i}`).join(",")}`]) {
      const refused = await json<{ error: { code: string } }>(`/sessions${query}`, { method: "DELETE" });
      expect(refused.status, query.slice(0, 20)).toBe(400);
      expect(refused.body.error.code).toBe("VALIDATION_ERROR");
    }
    expect((await json(`/sessions/${keep}`)).body.status).toBe("idle");
  });

  it("with idle, closes every open top-level session with no activity for that long", async () => {
    const { json } = await served();
    const make = async () => (await json("/sessions", { method: "POST", body: "{}" })).body.id;
    const [old, older, fresh] = [await make(), await make(), await make()];
    idleFor(old, 8 * DAY);
    idleFor(older, 30 * DAY);
    const res = await json<{ closed: Row[] }>("/sessions/close", { method: "POST", body: JSON.stringify({ idle: "7d" }) });
    expect(res.body.closed.map((r) => r.id)).toEqual([older, old]);
    expect((await json(`/sessions/${fresh}`)).body.status).toBe("idle");
  });

  it("refuses a body that is neither, both, or malformed", async () => {
    const { json } = await served();
    for (const body of [{}, { ids: ["a"], idle: "7d" }, { ids: [] }, { ids: "a" }, { idle: "7" }, { idle: "soon" }, { ids: Array.from({ length: 1001 }, (_, i) => `s${i}`) }]) {
      const res = await json<{ error: { code: string } }>("/sessions/close", { method: "POST", body: JSON.stringify(body) });
      expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      expect(res.body.error.code).toBe("VALIDATION_ERROR");
    }
  });
});

describe("limits.idleSessionTtl", () => {
  it("closes OpenAI-wire sessions nobody continued once idle past it; a continued one stays, and so does any other", async () => {
    const { json } = await served({ settings: { retry: { maxRetries: 0 }, limits: { idleSessionTtl: "2h" } } });
    const complete = async (model: string, content: string) => {
      h!.llm.enqueue(reply().text(`re: ${content}`).stop());
      const answer = await json<{ model: string }>("/v1/chat/completions", { method: "POST", body: JSON.stringify({ model, messages: [{ role: "user", content }] }) });
      return answer.body.model.split("/").at(-1)!;
    };
    const once = await complete("agent/default", "Summarise the changelog");
    const continued = await complete("agent/default", "Plan the migration");
    expect((await json(`/sessions/${once}`)).body).toMatchObject({ origin: "openai", ephemeral: true, title: "Summarise the changelog" });
    expect(await complete(`agent/default/${continued}`, "and the rollback")).toBe(continued);
    expect((await json(`/sessions/${continued}`)).body).toMatchObject({ ephemeral: false, title: "Plan the migration" });
    const api = (await json("/sessions", { method: "POST", body: "{}" })).body.id;
    const fresh = await complete("agent/default", "Fresh one");
    for (const id of [once, continued, api]) idleFor(id, 3 * 3_600_000);

    await h!.runtime.sweeper!.sweep();
    expect((await json(`/sessions/${once}`)).body.status).toBe("closed");
    for (const id of [continued, api, fresh]) expect((await json(`/sessions/${id}`)).body.status, id).toBe("idle");
    expect(h!.log.entries.some((e) => e.message === "closed one-shot sessions nobody continued" && JSON.stringify(e.fields).includes(once))).toBe(true);
  });

  it("veil serve sweeps at start and every minute; 0 or \"off\" never closes anything", async () => {
    const clock = new ManualClock(Date.now());
    h = await createRuntimeHarness({ clock, settings: { limits: { idleSessionTtl: 3600 } } });
    const { sessions } = h.runtime;
    const early = await sessions.create({ agent: "default", origin: "run", ephemeral: true });
    const later = await sessions.create({ agent: "default", origin: "run", ephemeral: true });
    idleFor(early.id, 2 * 3_600_000);
    // The first sweep ran at start, before `early` was backdated; the next comes a minute later.
    expect((await h.runtime.store.getSession(early.id))?.status).toBe("idle");
    await clock.advance(60_000);
    await expect.poll(async () => (await h!.runtime.store.getSession(early.id))?.status, { timeout: 10_000 }).toBe("closed");
    expect((await h.runtime.store.getSession(later.id))?.status).toBe("idle");
    await h.close();

    for (const off of [0, "off"]) {
      h = await createRuntimeHarness({ settings: { limits: { idleSessionTtl: off } } });
      const row = await h.runtime.sessions.create({ agent: "default", origin: "run", ephemeral: true });
      idleFor(row.id, 365 * DAY);
      await h.runtime.sweeper!.sweep();
      expect((await h.runtime.store.getSession(row.id))?.status).toBe("idle");
      await h.close();
    }
    h = undefined;
  });

  it("a bad value is a CONFIG_ERROR naming the file and the field", () => {
    for (const bad of ["soon", "7", -1]) {
      using ws = tmpWorkspace({ files: { ".veil/settings.json": JSON.stringify({ limits: { idleSessionTtl: bad } }) } });
      const failure = (() => {
        try {
          loadConfig({ workspace: ws.root, env: { VEIL_HOME: ws.path("home") } });
        } catch (error) {
          return error as VeilError;
        }
      })();
      expect(failure?.code, String(bad)).toBe("CONFIG_ERROR");
      expect(failure?.message).toContain(ws.path(".veil", "settings.json"));
      expect(failure?.message).toContain("idleSessionTtl");
    }
  });
});

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isVeilError } from "../../src/errors.js";
import { automationConformance } from "./automation-store.js";
import {
  ZERO_USAGE,
  type NewApiKey,
  type NewMessage,
  type Store,
  type TodoItem,
  type TokenUsage,
  type WakeupRow,
} from "../../src/store/store.js";
import { checkpointConformance } from "./checkpoint-store.js";

/**
 * What a conformance run needs from an implementation. The factory must return a fresh,
 * empty store each time. `reopen` (optional) returns a new Store over the same data; the
 * suite closes the old one first. `cleanup` removes the data; the suite closes whatever
 * store is current before calling it.
 */
export interface StoreFixture {
  store: Store;
  reopen?: () => Promise<Store>;
  cleanup: () => Promise<void>;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

const usage = (n: number): TokenUsage => ({
  prompt_tokens: n,
  completion_tokens: 2 * n,
  total_tokens: 3 * n,
  cached_tokens: 4 * n,
  cache_creation_tokens: 5 * n,
  reasoning_tokens: 6 * n,
});

async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, `expected a rejection with ${code}`).toBeDefined();
  expect(isVeilError(error) ? error.code : error).toBe(code);
}

/** Declares the Store contract as a vitest suite. Every Store implementation runs it. */
export function storeConformance(name: string, factory: () => Promise<StoreFixture>): void {
  describe(`Store conformance: ${name}`, () => {
    let fixture: StoreFixture;
    let store: Store;

    beforeEach(async () => {
      fixture = await factory();
      store = fixture.store;
    });

    afterEach(async () => {
      await store.close();
      await fixture.cleanup();
    });

    const session = (id: string, extra: Record<string, unknown> = {}) =>
      store.createSession({ id, agent: "default", mode: "chat", ...extra });
    const message = (id: string, sessionId: string, extra: Partial<NewMessage> = {}): NewMessage => ({
      id,
      session_id: sessionId,
      role: "user",
      content: `text of ${id}`,
      ...extra,
    });

    checkpointConformance(() => store);

    describe("sessions", () => {
      it("creates a session with defaults and reads it back unchanged", async () => {
        const created = await session("s1");
        expect(created).toMatchObject({
          id: "s1",
          agent: "default",
          mode: "chat",
          status: "idle",
          parent_session_id: null,
          spawn_depth: 0,
          instance_name: null,
          model: null,
          reasoning: null,
          budget_override: null,
          objective: null,
          success_criteria: null,
          token_usage: ZERO_USAGE,
          context_size: 0,
        });
        expect(created.created_at).toMatch(ISO);
        expect(created.updated_at).toMatch(ISO);
        expect(await store.getSession("s1")).toEqual(created);
      });

      it("round-trips every optional field, JSON ones included", async () => {
        await session("parent");
        const created = await session("child", {
          status: "running",
          parent_session_id: "parent",
          spawn_depth: 2,
          instance_name: "researcher",
          model: "openai/gpt-x",
          reasoning: { effort: "high", max_tokens: 4096 },
          budget_override: { max_tokens: 1000, max_wall_seconds: 60, max_spawn_depth: 1, max_iterations: 7 },
          objective: "find things",
          success_criteria: "found them",
        });
        const read = await store.getSession("child");
        expect(read).toEqual(created);
        expect(read?.reasoning).toEqual({ effort: "high", max_tokens: 4096 });
        expect(read?.budget_override).toEqual({ max_tokens: 1000, max_wall_seconds: 60, max_spawn_depth: 1, max_iterations: 7 });
        expect(read).toMatchObject({ status: "running", spawn_depth: 2, instance_name: "researcher", objective: "find things" });
      });

      it("returns undefined for an unknown session", async () => {
        expect(await store.getSession("nope")).toBeUndefined();
      });

      it("rejects a duplicate session id with CONFLICT", async () => {
        await session("s1");
        await expectCode(session("s1"), "CONFLICT");
      });

      it("lists sessions in creation order, filtered by parent and status", async () => {
        await session("p1");
        await session("p2");
        await session("c1", { parent_session_id: "p1", instance_name: "a" });
        await session("c2", { parent_session_id: "p1", instance_name: "b", status: "closed" });
        await session("c3", { parent_session_id: "p2", instance_name: "a" });
        const ids = async (filter?: Parameters<Store["listSessions"]>[0]) =>
          (await store.listSessions(filter)).map((s) => s.id);
        expect(await ids()).toEqual(["p1", "p2", "c1", "c2", "c3"]);
        expect(await ids({ parentSessionId: "p1" })).toEqual(["c1", "c2"]);
        expect(await ids({ status: "closed" })).toEqual(["c2"]);
        expect(await ids({ parentSessionId: "p1", status: "idle" })).toEqual(["c1"]);
        expect(await ids({ parentSessionId: "none" })).toEqual([]);
      });

      it("updates only the fields in the patch; null clears, undefined keeps", async () => {
        await session("s1", { model: "m1", reasoning: { effort: "low" }, budget_override: { max_tokens: 5 } });
        const afterStatus = await store.updateSession("s1", { status: "running" });
        expect(afterStatus).toMatchObject({ status: "running", model: "m1", reasoning: { effort: "low" }, budget_override: { max_tokens: 5 } });

        const cleared = await store.updateSession("s1", { model: null, reasoning: undefined, budget_override: null });
        expect(cleared).toMatchObject({ status: "running", model: null, reasoning: { effort: "low" }, budget_override: null });

        const withUsage = await store.updateSession("s1", { token_usage: usage(3), context_size: 1234, reasoning: { effort: "xhigh", max_tokens: 9 } });
        expect(withUsage.token_usage).toEqual(usage(3));
        expect(withUsage.context_size).toBe(1234);
        expect(withUsage.reasoning).toEqual({ effort: "xhigh", max_tokens: 9 });
        expect(withUsage.updated_at >= withUsage.created_at).toBe(true);
        expect(await store.getSession("s1")).toEqual(withUsage);
      });

      it("throws SESSION_NOT_FOUND when updating a missing session", async () => {
        await expectCode(store.updateSession("ghost", { status: "closed" }), "SESSION_NOT_FOUND");
      });

      it("adds token usage field by field and sets context_size", async () => {
        await session("s1");
        await store.addTokenUsage("s1", usage(1), 100);
        await store.addTokenUsage("s1", usage(10), 250);
        const row = await store.getSession("s1");
        expect(row?.token_usage).toEqual(usage(11));
        expect(row?.context_size).toBe(250);
      });

      it("adds token usage atomically under concurrent calls", async () => {
        await session("s1");
        await Promise.all(Array.from({ length: 25 }, (_, i) => store.addTokenUsage("s1", usage(1), i)));
        const row = await store.getSession("s1");
        expect(row?.token_usage).toEqual(usage(25));
      });

      it("throws SESSION_NOT_FOUND when adding usage to a missing session", async () => {
        await expectCode(store.addTokenUsage("ghost", usage(1), 1), "SESSION_NOT_FOUND");
      });

      it("finds a child by instance name under its own parent only", async () => {
        await session("p1");
        await session("p2");
        await session("c1", { parent_session_id: "p1", instance_name: "worker" });
        await session("c2", { parent_session_id: "p2", instance_name: "worker" });
        expect((await store.findChildByInstanceName("p1", "worker"))?.id).toBe("c1");
        expect((await store.findChildByInstanceName("p2", "worker"))?.id).toBe("c2");
        expect(await store.findChildByInstanceName("p1", "other")).toBeUndefined();
        expect(await store.findChildByInstanceName("c1", "worker")).toBeUndefined();
      });

      it("keeps a title, an origin and the ephemeral flag (defaults: none, api, false)", async () => {
        expect(await session("plain")).toMatchObject({ title: null, origin: "api", ephemeral: false });
        const run = await session("run", { title: "Fix the build", origin: "run", ephemeral: true });
        expect(run).toMatchObject({ title: "Fix the build", origin: "run", ephemeral: true });
        expect(await store.getSession("run")).toEqual(run);
        expect(await store.updateSession("run", { ephemeral: false })).toMatchObject({ ephemeral: false, title: "Fix the build" });
      });

      it("sets a title without touching updated_at: once when only unset, always (and kept) when given", async () => {
        const created = await session("s1", { origin: "run", ephemeral: true });
        const first = await store.setSessionTitle("s1", "From the first message", { ifUnset: true });
        expect(first).toMatchObject({ title: "From the first message", ephemeral: true, updated_at: created.updated_at });
        expect(await store.setSessionTitle("s1", "From a later message", { ifUnset: true })).toBeUndefined();
        expect((await store.getSession("s1"))?.title).toBe("From the first message");
        // A title someone chose also says the session is wanted: it is no longer ephemeral.
        expect(await store.setSessionTitle("s1", "Chosen")).toMatchObject({ title: "Chosen", ephemeral: false, updated_at: created.updated_at });
        expect(await store.setSessionTitle("s1", null)).toMatchObject({ title: null });
        await expectCode(store.setSessionTitle("ghost", "x"), "SESSION_NOT_FOUND");
        await expectCode(store.setSessionTitle("ghost", "x", { ifUnset: true }), "SESSION_NOT_FOUND");
      });

      it("lists by last activity, searches titles, ids, agents and instance names ignoring case, and limits", async () => {
        const tick = async () => {
          const start = Date.now();
          while (Date.now() === start) await new Promise((resolve) => setImmediate(resolve));
        };
        await session("s_alpha", { title: "Deploy the übersicht App" });
        await tick();
        await session("s_beta", { title: "Write release notes" });
        await tick();
        await session("s_gamma", { agent: "reviewer" });
        await tick();
        await store.updateSession("s_alpha", { status: "running" });
        const ids = async (filter: Parameters<Store["listSessions"]>[0]) => (await store.listSessions(filter)).map((s) => s.id);
        expect(await ids({ order: "activity" })).toEqual(["s_alpha", "s_gamma", "s_beta"]);
        expect(await ids({})).toEqual(["s_alpha", "s_beta", "s_gamma"]);
        expect(await ids({ order: "activity", limit: 2 })).toEqual(["s_alpha", "s_gamma"]);
        expect(await ids({ query: "RELEASE" })).toEqual(["s_beta"]);
        expect(await ids({ query: "übersicht app" })).toEqual(["s_alpha"]);
        expect(await ids({ query: "review" })).toEqual(["s_gamma"]);
        expect(await ids({ query: "S_BE" })).toEqual(["s_beta"]);
        expect(await ids({ query: "%" })).toEqual([]);
        expect(await ids({ query: "e", status: "idle", order: "activity" })).toEqual(["s_gamma", "s_beta"]);
        // A title change is not activity.
        await store.setSessionTitle("s_beta", "Renamed");
        expect(await ids({ order: "activity" })).toEqual(["s_alpha", "s_gamma", "s_beta"]);
      });

      it("rejects a second child with the same instance name under one parent", async () => {
        await session("p1");
        await session("c1", { parent_session_id: "p1", instance_name: "worker" });
        await expectCode(session("c2", { parent_session_id: "p1", instance_name: "worker" }), "CONFLICT");
        expect((await store.listSessions({ parentSessionId: "p1" })).map((s) => s.id)).toEqual(["c1"]);
      });
    });

    describe("messages", () => {
      it("assigns seq from 1 per session and returns the full row", async () => {
        await session("s1");
        await session("s2");
        const a = await store.appendMessage(message("m1", "s1"));
        const b = await store.appendMessage(message("m2", "s2"));
        const c = await store.appendMessage(message("m3", "s1", { role: "assistant" }));
        expect([a.seq, b.seq, c.seq]).toEqual([1, 1, 2]);
        expect(a).toEqual({
          id: "m1",
          session_id: "s1",
          seq: 1,
          role: "user",
          content: "text of m1",
          thinking: null,
          tool_calls: null,
          tool_call_id: null,
          finish_reason: null,
          token_usage: null,
          meta: null,
          kind: null,
          compacted: false,
          reverted: false,
          created_at: a.created_at,
        });
        expect(a.created_at).toMatch(ISO);
        expect(await store.getMessage("m1")).toEqual(a);
      });

      it("round-trips thinking, tool_calls, token_usage, finish_reason and meta", async () => {
        await session("s1");
        const toolCalls = [
          { id: "call_1", name: "read_file", arguments: '{"path":"a.txt"}' },
          { id: "call_2", name: "bash", arguments: '{"command":"echo \\"hi\\" ünï"}' },
        ];
        const meta = { source: "agent", nested: { list: [1, "two", null, true] }, n: 1.5 };
        const written = await store.appendMessage(
          message("m1", "s1", {
            role: "assistant",
            content: null,
            thinking: "let me think",
            tool_calls: toolCalls,
            finish_reason: "tool_calls",
            token_usage: usage(7),
            meta,
          }),
        );
        const tool = await store.appendMessage(message("m2", "s1", { role: "tool", tool_call_id: "call_1", content: "file body" }));
        const read = await store.getMessage("m1");
        expect(read).toEqual(written);
        expect(read).toMatchObject({ content: null, thinking: "let me think", tool_calls: toolCalls, token_usage: usage(7), meta, finish_reason: "tool_calls" });
        expect((await store.getMessage("m2"))?.tool_call_id).toBe("call_1");
        expect(tool.seq).toBe(2);
      });

      it("keeps seq unique and gap-free under concurrent appends", async () => {
        await session("s1");
        const rows = await Promise.all(Array.from({ length: 40 }, (_, i) => store.appendMessage(message(`m${i}`, "s1"))));
        expect(rows.map((r) => r.seq).sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
        const listed = await store.listMessages("s1");
        expect(listed.map((r) => r.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      });

      it("lists messages by seq with afterSeq and limit, one session only", async () => {
        await session("s1");
        await session("s2");
        for (let i = 1; i <= 6; i++) {
          await store.appendMessage(message(`a${i}`, "s1"));
          if (i % 2 === 0) await store.appendMessage(message(`b${i}`, "s2"));
        }
        const ids = async (sessionId: string, options?: { afterSeq?: number; limit?: number }) =>
          (await store.listMessages(sessionId, options)).map((m) => m.id);
        expect(await ids("s1")).toEqual(["a1", "a2", "a3", "a4", "a5", "a6"]);
        expect(await ids("s2")).toEqual(["b2", "b4", "b6"]);
        expect(await ids("s1", { afterSeq: 4 })).toEqual(["a5", "a6"]);
        expect(await ids("s1", { limit: 2 })).toEqual(["a1", "a2"]);
        expect(await ids("s1", { afterSeq: 2, limit: 3 })).toEqual(["a3", "a4", "a5"]);
        expect(await ids("s1", { afterSeq: 6 })).toEqual([]);
        expect(await ids("unknown")).toEqual([]);
      });

      it("returns undefined for an unknown message", async () => {
        expect(await store.getMessage("nope")).toBeUndefined();
      });

      it("rejects a message for a missing session with SESSION_NOT_FOUND", async () => {
        await expectCode(store.appendMessage(message("m1", "ghost")), "SESSION_NOT_FOUND");
      });

      it("rejects a duplicate message id with CONFLICT and assigns no seq", async () => {
        await session("s1");
        await store.appendMessage(message("m1", "s1"));
        await expectCode(store.appendMessage(message("m1", "s1")), "CONFLICT");
        expect((await store.appendMessage(message("m2", "s1"))).seq).toBe(2);
      });

      it("replaces a message's meta and leaves the rest alone", async () => {
        await session("s1");
        const before = await store.appendMessage(message("m1", "s1", { meta: { source: "user", a: 1 } }));
        await store.updateMessageMeta("s1", "m1", { source: "user", audit: "edited" });
        expect(await store.getMessage("m1")).toEqual({ ...before, meta: { source: "user", audit: "edited" } });
        await expectCode(store.updateMessageMeta("s1", "nope", {}), "NOT_FOUND");
        // A message of another session is not this session's to change.
        await session("s2");
        await expectCode(store.updateMessageMeta("s2", "m1", { source: "other" }), "NOT_FOUND");
        expect((await store.getMessage("m1"))?.meta).toEqual({ source: "user", audit: "edited" });
      });
    });

    describe("tool calls", () => {
      const call = (id: string, sessionId = "s1") => ({
        id,
        session_id: sessionId,
        message_id: "m1",
        name: "bash",
        arguments: '{"command":"ls"}',
        state: "pending" as const,
      });

      beforeEach(async () => {
        await session("s1");
        await session("s2");
        await store.appendMessage(message("m1", "s1", { role: "assistant" }));
      });

      it("inserts a call with empty output and timestamps, then upserts it in place", async () => {
        await store.upsertToolCall(call("c1"));
        await store.upsertToolCall(call("c2"));
        expect(await store.listToolCalls("s1")).toEqual([
          { ...call("c1"), output: null, started_at: null, ended_at: null },
          { ...call("c2"), output: null, started_at: null, ended_at: null },
        ]);
        await store.upsertToolCall({ ...call("c1"), arguments: '{"command":"pwd"}', state: "done", output: "/", started_at: "2026-01-01T00:00:00.000Z", ended_at: "2026-01-01T00:00:01.000Z" });
        const rows = await store.listToolCalls("s1");
        expect(rows.map((r) => r.id)).toEqual(["c1", "c2"]);
        expect(rows[0]).toEqual({ ...call("c1"), arguments: '{"command":"pwd"}', state: "done", output: "/", started_at: "2026-01-01T00:00:00.000Z", ended_at: "2026-01-01T00:00:01.000Z" });
      });

      it("moves through states, stamping start and end and keeping output unless given", async () => {
        await store.upsertToolCall(call("c1"));
        await store.setToolCallState("c1", "s1", "validating");
        let [row] = await store.listToolCalls("s1");
        expect(row).toMatchObject({ state: "validating", output: null, ended_at: null });
        expect(row?.started_at).toMatch(ISO);
        const startedAt = row?.started_at;

        await store.setToolCallState("c1", "s1", "executing", "partial");
        [row] = await store.listToolCalls("s1");
        expect(row).toMatchObject({ state: "executing", output: "partial", started_at: startedAt, ended_at: null });

        await store.setToolCallState("c1", "s1", "done");
        [row] = await store.listToolCalls("s1");
        expect(row).toMatchObject({ state: "done", output: "partial", started_at: startedAt });
        expect(row?.ended_at).toMatch(ISO);
        expect(row!.ended_at! >= row!.started_at!).toBe(true);

        await store.setToolCallState("c1", "s1", "error", null);
        [row] = await store.listToolCalls("s1");
        expect(row).toMatchObject({ state: "error", output: null });
      });

      it("filters by state and keeps sessions apart (the same call id may exist in two sessions)", async () => {
        await store.upsertToolCall(call("c1"));
        await store.upsertToolCall(call("c2"));
        await store.upsertToolCall(call("c3"));
        await store.upsertToolCall({ ...call("c1", "s2"), name: "grep" });
        await store.setToolCallState("c1", "s1", "done", "ok");
        await store.setToolCallState("c2", "s1", "executing");
        const ids = async (states?: Parameters<Store["listToolCalls"]>[1]) =>
          (await store.listToolCalls("s1", states)).map((r) => `${r.id}:${r.state}`);
        expect(await ids()).toEqual(["c1:done", "c2:executing", "c3:pending"]);
        expect(await ids({ states: ["pending", "executing"] })).toEqual(["c2:executing", "c3:pending"]);
        expect(await ids({ states: ["cancelled"] })).toEqual([]);
        expect(await ids({ states: [] })).toEqual([]);
        const other = await store.listToolCalls("s2");
        expect(other).toEqual([{ ...call("c1", "s2"), name: "grep", output: null, started_at: null, ended_at: null }]);
      });

      it("throws NOT_FOUND when setting the state of an unknown call", async () => {
        await store.upsertToolCall(call("c1"));
        await expectCode(store.setToolCallState("c1", "s2", "done"), "NOT_FOUND");
        await expectCode(store.setToolCallState("zz", "s1", "done"), "NOT_FOUND");
      });
    });

    describe("inbox", () => {
      const item = (id: string, sessionId = "s1", meta: Record<string, unknown> | null = null) => ({
        id,
        session_id: sessionId,
        content: `inbox ${id}`,
        meta,
        created_at: "2026-01-01T00:00:00.000Z",
      });
      const delivery = (inboxId: string, sessionId = "s1") => ({
        inboxId,
        message: message(`msg-${inboxId}`, sessionId, { content: `inbox ${inboxId}`, meta: { source: "user", inbox: inboxId } }),
      });

      beforeEach(async () => {
        await session("s1");
        await session("s2");
      });

      it("keeps items in arrival order per session with meta", async () => {
        await store.addInbox(item("i1", "s1", { from: "parent" }));
        await store.addInbox(item("i2", "s2"));
        await store.addInbox(item("i3", "s1"));
        expect(await store.listInbox("s1")).toEqual([item("i1", "s1", { from: "parent" }), item("i3", "s1")]);
        expect(await store.listInbox("s2")).toEqual([item("i2", "s2")]);
        expect(await store.listInbox("unknown")).toEqual([]);
      });

      it("lists the sessions that have undelivered items, once each", async () => {
        expect(await store.sessionsWithInbox()).toEqual([]);
        await store.addInbox(item("i1", "s2"));
        await store.addInbox(item("i2", "s1"));
        await store.addInbox(item("i3", "s2"));
        expect([...(await store.sessionsWithInbox())].sort()).toEqual(["s1", "s2"]);
        await store.deliverInbox("s2", [delivery("i1", "s2"), delivery("i3", "s2")]);
        expect(await store.sessionsWithInbox()).toEqual(["s1"]);
      });

      it("delivers items as messages in the given order, after existing ones, and removes them", async () => {
        await store.appendMessage(message("m1", "s1"));
        await store.addInbox(item("i1"));
        await store.addInbox(item("i2"));
        await store.addInbox(item("i3"));
        const rows = await store.deliverInbox("s1", [delivery("i2"), delivery("i1")]);
        expect(rows.map((r) => [r.id, r.seq, r.role, r.content])).toEqual([
          ["msg-i2", 2, "user", "inbox i2"],
          ["msg-i1", 3, "user", "inbox i1"],
        ]);
        expect(rows[0]?.meta).toEqual({ source: "user", inbox: "i2" });
        expect((await store.listMessages("s1")).map((m) => m.id)).toEqual(["m1", "msg-i2", "msg-i1"]);
        expect(await store.getMessage("msg-i1")).toEqual(rows[1]);
        expect((await store.listInbox("s1")).map((i) => i.id)).toEqual(["i3"]);
      });

      it("is idempotent: already delivered items are skipped", async () => {
        await store.addInbox(item("i1"));
        await store.addInbox(item("i2"));
        expect((await store.deliverInbox("s1", [delivery("i1")])).map((r) => r.id)).toEqual(["msg-i1"]);
        const second = await store.deliverInbox("s1", [delivery("i1"), delivery("i2")]);
        expect(second.map((r) => [r.id, r.seq])).toEqual([["msg-i2", 2]]);
        expect(await store.deliverInbox("s1", [delivery("i1"), delivery("i2")])).toEqual([]);
        expect((await store.listMessages("s1")).map((m) => m.id)).toEqual(["msg-i1", "msg-i2"]);
      });

      it("never duplicates when two deliveries of the same items race", async () => {
        const ids = ["i1", "i2", "i3", "i4"];
        for (const id of ids) await store.addInbox(item(id));
        const [a, b] = await Promise.all([
          store.deliverInbox("s1", ids.map((id) => delivery(id))),
          store.deliverInbox("s1", ids.map((id) => delivery(id))),
        ]);
        expect(a.length + b.length).toBe(4);
        const messages = await store.listMessages("s1");
        expect(messages.map((m) => m.id)).toEqual(ids.map((id) => `msg-${id}`));
        expect(messages.map((m) => m.seq)).toEqual([1, 2, 3, 4]);
        expect(await store.listInbox("s1")).toEqual([]);
      });

      it("only takes items of the named session", async () => {
        await store.addInbox(item("i1", "s2"));
        expect(await store.deliverInbox("s1", [delivery("i1", "s1")])).toEqual([]);
        expect((await store.listInbox("s2")).map((i) => i.id)).toEqual(["i1"]);
        expect(await store.listMessages("s1")).toEqual([]);
      });

      it("is atomic: a failing delivery leaves the inbox and messages untouched", async () => {
        await store.appendMessage(message("taken", "s1"));
        await store.addInbox(item("i1"));
        await store.addInbox(item("i2"));
        const bad = { inboxId: "i2", message: message("taken", "s1") };
        await expect(store.deliverInbox("s1", [delivery("i1"), bad])).rejects.toBeDefined();
        expect((await store.listInbox("s1")).map((i) => i.id)).toEqual(["i1", "i2"]);
        expect((await store.listMessages("s1")).map((m) => m.id)).toEqual(["taken"]);
        expect(await store.getMessage("msg-i1")).toBeUndefined();
      });
    });

    describe("steps (assistant rows with their calls, results with their states)", () => {
      it("writes an assistant row and its pending tool calls together", async () => {
        await session("s1");
        const row = await store.appendAssistantStep(
          message("a1", "s1", { role: "assistant", content: null, tool_calls: [{ id: "c1", name: "bash", arguments: "{}" }, { id: "c2", name: "grep", arguments: "{\"q\":1}" }] }),
          [{ id: "c1", name: "bash", arguments: "{}" }, { id: "c2", name: "grep", arguments: "{\"q\":1}" }],
        );
        expect(row.seq).toBe(1);
        expect(row.tool_calls?.map((c) => c.id)).toEqual(["c1", "c2"]);
        const calls = await store.listToolCalls("s1");
        expect(calls.map((c) => [c.id, c.state, c.message_id])).toEqual([["c1", "pending", "a1"], ["c2", "pending", "a1"]]);
      });

      it("writes nothing when the step fails (unknown session)", async () => {
        await expect(store.appendAssistantStep(message("a1", "nope", { role: "assistant" }), [{ id: "c1", name: "bash", arguments: "{}" }])).rejects.toBeDefined();
        expect(await store.listToolCalls("nope")).toEqual([]);
      });

      it("adds a step's spend to the session's totals with the assistant row", async () => {
        await session("s1");
        await store.addTokenUsage("s1", usage(1), 40, 0.5);
        await store.appendAssistantStep(message("a1", "s1", { role: "assistant" }), [{ id: "c1", name: "bash", arguments: "{}" }], { usage: usage(10), contextSize: 120, costUsd: 0.25 });
        const row = await store.getSession("s1");
        expect(row?.token_usage).toEqual(usage(11));
        expect(row?.context_size).toBe(120);
        expect(row?.cost_usd).toBeCloseTo(0.75, 10);
        expect((await store.listMessages("s1")).map((m) => m.id)).toEqual(["a1"]);
      });

      it("leaves the session's totals alone when a step has no spend", async () => {
        await session("s1");
        await store.addTokenUsage("s1", usage(2), 77, 0.5);
        const before = await store.getSession("s1");
        await store.appendAssistantStep(message("a1", "s1", { role: "assistant" }), []);
        const after = await store.getSession("s1");
        expect(after?.token_usage).toEqual(before?.token_usage);
        expect(after?.context_size).toBe(77);
        expect(after?.cost_usd).toBeCloseTo(0.5, 10);
      });

      it("stores neither the row nor the spend when the step fails (repeated message id)", async () => {
        await session("s1");
        await store.appendMessage(message("a1", "s1"));
        await expect(store.appendAssistantStep(message("a1", "s1", { role: "assistant" }), [], { usage: usage(5), contextSize: 9 })).rejects.toBeDefined();
        const row = await store.getSession("s1");
        expect(row?.token_usage).toEqual(usage(0));
        expect(row?.context_size).toBe(0);
        expect(await store.listMessages("s1")).toHaveLength(1);
      });

      it("records a tool result and its call's terminal state together", async () => {
        await session("s1");
        await store.appendAssistantStep(message("a1", "s1", { role: "assistant" }), [{ id: "c1", name: "bash", arguments: "{}" }]);
        const row = await store.recordToolResult({ sessionId: "s1", callId: "c1", state: "done", message: message("t1", "s1", { role: "tool", content: "out", tool_call_id: "c1" }) });
        expect(row).toMatchObject({ seq: 2, role: "tool", tool_call_id: "c1", content: "out" });
        const [call] = await store.listToolCalls("s1");
        expect(call).toMatchObject({ state: "done", output: "out" });
        expect(call!.ended_at).toMatch(ISO);
      });

      it("keeps kind and the compacted flag on messages", async () => {
        await session("s1");
        await store.appendMessage(message("m1", "s1"));
        await store.appendMessage(message("m2", "s1", { role: "assistant", kind: "summary" }));
        await store.setCompacted("s1", ["m1"]);
        const rows = await store.listMessages("s1");
        expect(rows.map((r) => [r.id, r.kind, r.compacted])).toEqual([["m1", null, true], ["m2", "summary", false]]);
      });

      it("adds cost to the session's total", async () => {
        await session("s1");
        await store.addTokenUsage("s1", usage(1), 10, 0.25);
        await store.addTokenUsage("s1", usage(1), 20, 0.5);
        await store.addTokenUsage("s1", usage(1), 30);
        expect((await store.getSession("s1"))?.cost_usd).toBeCloseTo(0.75, 10);
      });
    });

    describe("event log", () => {
      const ev = (sessionId: string, seq: number, type = "chat.message") => ({ session_id: sessionId, seq, type, ts: 1000 + seq, data: JSON.stringify({ type, sessionId, seq }) });

      it("appends in one call, assigns increasing gseq, and lists by session and globally", async () => {
        const first = await store.appendEvents([ev("s1", 1), ev("s2", 1), ev("s1", 2)]);
        expect(first.map((e) => e.seq)).toEqual([1, 1, 2]);
        expect(first[1]!.gseq).toBeGreaterThan(first[0]!.gseq);
        expect(first[2]!.gseq).toBeGreaterThan(first[1]!.gseq);
        const more = await store.appendEvents([ev("s1", 3, "tool.end")]);
        expect(more[0]!.gseq).toBeGreaterThan(first[2]!.gseq);

        const s1 = await store.listEvents("s1");
        expect(s1.map((e) => e.seq)).toEqual([1, 2, 3]);
        expect(s1[2]).toEqual({ gseq: more[0]!.gseq, session_id: "s1", seq: 3, type: "tool.end", ts: 1003, data: ev("s1", 3, "tool.end").data });
        expect((await store.listEvents("s1", { after: 1, limit: 1 })).map((e) => e.seq)).toEqual([2]);
        expect(await store.listEvents("s1", { after: 3 })).toEqual([]);
        expect((await store.listEventsGlobal({ after: first[0]!.gseq })).map((e) => [e.session_id, e.seq])).toEqual([["s2", 1], ["s1", 2], ["s1", 3]]);
        expect((await store.listEventsGlobal({ limit: 2 })).length).toBe(2);
        expect(await store.lastEventSeq("s1")).toBe(3);
        expect(await store.lastEventSeq("none")).toBe(0);
        expect(await store.lastEventGseq()).toBe(more[0]!.gseq);
        expect(await store.appendEvents([])).toEqual([]);
      });

      it("refuses a repeated seq for a session and stores none of that batch", async () => {
        await store.appendEvents([ev("s1", 1)]);
        await expect(store.appendEvents([ev("s1", 2), ev("s1", 1)])).rejects.toBeDefined();
        expect((await store.listEvents("s1")).map((e) => e.seq)).toEqual([1]);
      });
    });

    describe("read markers", () => {
      it("records reads per session and path", async () => {
        expect(await store.hasRead("s1", "/w/a.txt")).toBe(false);
        await store.markRead("s1", "/w/a.txt");
        await store.markRead("s1", "/w/a.txt");
        expect(await store.hasRead("s1", "/w/a.txt")).toBe(true);
        expect(await store.hasRead("s1", "/w/b.txt")).toBe(false);
        expect(await store.hasRead("s2", "/w/a.txt")).toBe(false);
      });

      it("clearReadMarkers forgets one session's reads and no other's", async () => {
        await store.markRead("s1", "/w/a.txt");
        await store.markRead("s1", "/w/b.txt");
        await store.markRead("s2", "/w/a.txt");
        await store.clearReadMarkers("s1");
        expect(await store.hasRead("s1", "/w/a.txt")).toBe(false);
        expect(await store.hasRead("s1", "/w/b.txt")).toBe(false);
        expect(await store.hasRead("s2", "/w/a.txt")).toBe(true);
        await store.clearReadMarkers("s1");
        await store.markRead("s1", "/w/a.txt");
        expect(await store.hasRead("s1", "/w/a.txt")).toBe(true);
      });
    });

    describe("todos", () => {
      const todos: TodoItem[] = [
        { id: "1", content: "write tests", status: "in_progress", priority: "high" },
        { id: "2", content: "ship", status: "pending", priority: "low" },
        { id: "0", content: "plan", status: "completed", priority: "medium" },
      ];

      it("returns an empty list for a session without todos", async () => {
        expect(await store.getTodos("s1")).toEqual([]);
      });

      it("keeps the given order and replaces the whole list on each set", async () => {
        await store.setTodos("s1", todos);
        expect(await store.getTodos("s1")).toEqual(todos);
        const next: TodoItem[] = [{ id: "9", content: "only one", status: "pending", priority: "medium" }];
        await store.setTodos("s1", next);
        expect(await store.getTodos("s1")).toEqual(next);
        await store.setTodos("s1", []);
        expect(await store.getTodos("s1")).toEqual([]);
      });

      it("keeps sessions apart", async () => {
        await store.setTodos("s1", todos);
        await store.setTodos("s2", [todos[1]!]);
        expect(await store.getTodos("s1")).toEqual(todos);
        expect(await store.getTodos("s2")).toEqual([todos[1]]);
      });
    });

    describe("wake-ups", () => {
      const wakeup = (sessionId: string, nextFireAt: number, extra: Partial<WakeupRow> = {}): WakeupRow => ({
        session_id: sessionId,
        time: "30m",
        interval_ms: 1_800_000,
        message: `wake ${sessionId}`,
        loop: false,
        next_fire_at: nextFireAt,
        created_at: "2026-01-01T00:00:00.000Z",
        ...extra,
      });

      it("sets, reads, replaces and deletes one wake-up per session", async () => {
        expect(await store.getWakeup("s1")).toBeUndefined();
        await store.setWakeup(wakeup("s1", 1_000));
        expect(await store.getWakeup("s1")).toEqual(wakeup("s1", 1_000));
        const replaced = wakeup("s1", 5_000, { time: "90s", interval_ms: 90_000, loop: true, message: "again" });
        await store.setWakeup(replaced);
        expect(await store.getWakeup("s1")).toEqual(replaced);
        expect(await store.listWakeups()).toHaveLength(1);
        await store.deleteWakeup("s1");
        expect(await store.getWakeup("s1")).toBeUndefined();
        await store.deleteWakeup("s1");
        expect(await store.listWakeups()).toEqual([]);
      });

      it("lists all wake-ups, soonest first", async () => {
        await store.setWakeup(wakeup("late", 3_000_000_000_000));
        await store.setWakeup(wakeup("soon", 1_700_000_000_000, { loop: true }));
        await store.setWakeup(wakeup("mid", 2_000_000_000_000));
        const rows = await store.listWakeups();
        expect(rows.map((r) => r.session_id)).toEqual(["soon", "mid", "late"]);
        expect(rows[0]).toEqual(wakeup("soon", 1_700_000_000_000, { loop: true }));
      });
    });

    describe("session meta", () => {
      it("stores any JSON value per session and key", async () => {
        const values: [string, unknown][] = [
          ["string", "text"],
          ["number", 42.5],
          ["zero", 0],
          ["bool", false],
          ["null", null],
          ["array", [1, "a", { b: [true] }]],
          ["object", { contact: { baseline: "x" }, list: [] }],
          ["empty", ""],
        ];
        for (const [key, value] of values) await store.setSessionMeta("s1", key, value);
        for (const [key, value] of values) expect(await store.getSessionMeta("s1", key)).toEqual(value);
        expect(await store.getSessionMeta("s1", "null")).toBeNull();
        expect(await store.getSessionMeta("s1", "missing")).toBeUndefined();
        expect(await store.getSessionMeta("s2", "string")).toBeUndefined();
      });

      it("overwrites a key", async () => {
        await store.setSessionMeta("s1", "activated_tools", ["a"]);
        await store.setSessionMeta("s1", "activated_tools", ["a", "b"]);
        expect(await store.getSessionMeta<string[]>("s1", "activated_tools")).toEqual(["a", "b"]);
      });
    });

    describe("audit", () => {
      it("appends rows with increasing ids and filters by session and kind", async () => {
        await store.addAudit({ session_id: "s1", kind: "permission", data: { tool: "bash", allowed: false } });
        await store.addAudit({ session_id: "s2", kind: "permission", data: { tool: "grep" } });
        await store.addAudit({ session_id: null, kind: "startup", data: { version: "0.1.0", nested: { a: [1] } } });
        await store.addAudit({ session_id: "s1", kind: "log", data: {} });
        const all = await store.listAudit();
        expect(all.map((r) => [r.session_id, r.kind])).toEqual([
          ["s1", "permission"],
          ["s2", "permission"],
          [null, "startup"],
          ["s1", "log"],
        ]);
        expect(all[2]?.data).toEqual({ version: "0.1.0", nested: { a: [1] } });
        expect(all[0]?.created_at).toMatch(ISO);
        const ids = all.map((r) => r.id);
        expect([...ids].sort((a, b) => a - b)).toEqual(ids);
        expect(new Set(ids).size).toBe(4);
        expect((await store.listAudit({ sessionId: "s1" })).map((r) => r.kind)).toEqual(["permission", "log"]);
        expect((await store.listAudit({ kind: "permission" })).map((r) => r.session_id)).toEqual(["s1", "s2"]);
        expect(await store.listAudit({ sessionId: "s1", kind: "permission" })).toEqual([all[0]]);
        expect(await store.listAudit({ kind: "nothing" })).toEqual([]);
      });
    });

    automationConformance(() => store);
    describe("access: keys, owners, request counters, request audit", () => {
      const key = (id: string, extra: Partial<NewApiKey> = {}): NewApiKey => ({
        id,
        name: `name of ${id}`,
        hash: `hash-${id}`,
        prefix: "veil_sk_abcd",
        scopes: ["read", "chat"],
        agents: null,
        requests_per_minute: null,
        budget_usd: null,
        expires_at: null,
        ...extra,
      });

      it("stores keys by hash, lists them in creation order and revokes once", async () => {
        const a = await store.createKey(key("k1", { agents: ["default"], requests_per_minute: 5, budget_usd: 1.25, expires_at: "2030-01-01T00:00:00.000Z" }));
        expect(a).toMatchObject({ id: "k1", scopes: ["read", "chat"], agents: ["default"], requests_per_minute: 5, budget_usd: 1.25, revoked_at: null });
        expect(a.created_at).toMatch(ISO);
        await store.createKey(key("k2", { scopes: ["admin"] }));
        expect(await store.findKeyByHash("hash-k1")).toEqual(a);
        expect(await store.findKeyByHash("nope")).toBeUndefined();
        expect(await store.getKey("k2")).toMatchObject({ scopes: ["admin"], agents: null, budget_usd: null });
        expect((await store.listKeys()).map((k) => k.id)).toEqual(["k1", "k2"]);
        await expect(store.createKey(key("k3", { hash: "hash-k1" }))).rejects.toThrow();
        const revoked = await store.revokeKey("k1");
        expect(revoked?.revoked_at).toMatch(ISO);
        expect((await store.revokeKey("k1"))?.revoked_at).toBe(revoked?.revoked_at);
        expect(await store.revokeKey("unknown")).toBeUndefined();
        expect((await store.findKeyByHash("hash-k1"))?.revoked_at).toBe(revoked?.revoked_at);
      });

      it("gives a session its owner key, its sub-agents inherit it, and lists and sums by owner", async () => {
        await session("a1", { owner_key: "k1" });
        await session("child", { parent_session_id: "a1", instance_name: "w" });
        await session("b1", { owner_key: "k2" });
        await session("plain");
        expect((await store.getSession("a1"))?.owner_key).toBe("k1");
        expect((await store.getSession("child"))?.owner_key).toBe("k1");
        expect((await store.getSession("plain"))?.owner_key).toBeNull();
        expect((await store.listSessions({ ownerKey: "k1" })).map((s) => s.id)).toEqual(["a1", "child"]);
        expect((await store.listSessions({ ownerKey: "k1", parentSessionId: "a1" })).map((s) => s.id)).toEqual(["child"]);
        expect(await store.listSessions({ ownerKey: "nobody" })).toEqual([]);
        await store.addTokenUsage("a1", usage(1), 3, 0.5);
        await store.addTokenUsage("child", usage(1), 3, 0.25);
        await store.addTokenUsage("b1", usage(1), 3, 2);
        await store.addTokenUsage("plain", usage(1), 3, 9);
        expect(await store.spendByKey()).toEqual({ k1: 0.75, k2: 2 });
        expect(await store.spendByKey("k1")).toEqual({ k1: 0.75 });
        expect(await store.spendByKey("nobody")).toEqual({});
      });

      it("counts a key's requests per window and drops older windows", async () => {
        expect(await store.countKeyRequest("k1", 60_000)).toBe(1);
        expect(await store.countKeyRequest("k1", 60_000)).toBe(2);
        expect(await store.countKeyRequest("k2", 60_000)).toBe(1);
        expect(await Promise.all([store.countKeyRequest("k1", 60_000), store.countKeyRequest("k1", 60_000)])).toEqual(expect.arrayContaining([3, 4]));
        expect(await store.countKeyRequest("k1", 120_000)).toBe(1);
        expect(await store.countKeyRequest("k1", 60_000)).toBe(1);
      });

      it("appends request audit entries in seq order and pages them", async () => {
        const first = await store.addRequestAudit({ at: "2026-01-01T00:00:00.000Z", key_id: "admin", method: "POST", path: "/keys", status: 201, session_id: null });
        await store.addRequestAudit({ at: "2026-01-01T00:00:01.000Z", key_id: "k1", method: "POST", path: "/sessions/s1/chat", status: 200, session_id: "s1" });
        await store.addRequestAudit({ at: "2026-01-01T00:00:02.000Z", key_id: "k1", method: "DELETE", path: "/sessions/s1", status: 404, session_id: "s1" });
        expect(first).toEqual({ seq: first.seq, at: "2026-01-01T00:00:00.000Z", key_id: "admin", method: "POST", path: "/keys", status: 201, session_id: null });
        const all = await store.listRequestAudit();
        expect(all.map((e) => [e.key_id, e.method, e.status])).toEqual([
          ["admin", "POST", 201],
          ["k1", "POST", 200],
          ["k1", "DELETE", 404],
        ]);
        expect(all.map((e) => e.seq)).toEqual([...all.map((e) => e.seq)].sort((a, b) => a - b));
        expect((await store.listRequestAudit({ after: all[0]!.seq, limit: 1 })).map((e) => e.path)).toEqual(["/sessions/s1/chat"]);
        expect(await store.listRequestAudit({ after: all[2]!.seq })).toEqual([]);
      });
    });

    describe("lifecycle", () => {
      it("closes idempotently", async () => {
        await store.close();
        await store.close();
      });

      it("keeps everything across a reopen", async (ctx) => {
        if (!fixture.reopen) return ctx.skip();
        await session("p");
        await session("s1", { parent_session_id: "p", instance_name: "w", reasoning: { effort: "low" } });
        await store.addTokenUsage("s1", usage(2), 77);
        const m1 = await store.appendMessage(message("m1", "s1", { tool_calls: [{ id: "c1", name: "bash", arguments: "{}" }] }));
        await store.upsertToolCall({ id: "c1", session_id: "s1", message_id: "m1", name: "bash", arguments: "{}", state: "pending" });
        await store.setToolCallState("c1", "s1", "done", "out");
        await store.addInbox({ id: "i1", session_id: "s1", content: "later", meta: null, created_at: "2026-01-01T00:00:00.000Z" });
        await store.markRead("s1", "/a");
        await store.setTodos("s1", [{ id: "1", content: "t", status: "pending", priority: "high" }]);
        await store.setWakeup({ session_id: "s1", time: "5", interval_ms: 5000, message: "w", loop: true, next_fire_at: 123, created_at: "2026-01-01T00:00:00.000Z" });
        await store.setSessionMeta("s1", "k", { v: 1 });
        await store.addAudit({ session_id: "s1", kind: "k", data: { x: 1 } });
        await store.appendEvents([{ session_id: "s1", seq: 1, type: "session.state", ts: 1, data: "{}" }]);
        const before = {
          session: await store.getSession("s1"),
          calls: await store.listToolCalls("s1"),
          audit: await store.listAudit(),
        };

        await store.close();
        store = await fixture.reopen();

        expect(await store.getSession("s1")).toEqual(before.session);
        expect(await store.listMessages("s1")).toEqual([m1]);
        expect(await store.listToolCalls("s1")).toEqual(before.calls);
        expect((await store.listInbox("s1")).map((i) => i.id)).toEqual(["i1"]);
        expect(await store.hasRead("s1", "/a")).toBe(true);
        expect(await store.getTodos("s1")).toHaveLength(1);
        expect((await store.getWakeup("s1"))?.loop).toBe(true);
        expect(await store.getSessionMeta("s1", "k")).toEqual({ v: 1 });
        expect(await store.listAudit()).toEqual(before.audit);
        expect((await store.findChildByInstanceName("p", "w"))?.id).toBe("s1");
        expect((await store.appendMessage(message("m2", "s1"))).seq).toBe(2);
        expect(await store.lastEventSeq("s1")).toBe(1);
      });
    });
  });
}

import { afterEach, describe, expect, it } from "vitest";
import { Type } from "../../src/schema.js";
import { ManualClock } from "../../src/base/clock.js";
import type { EventSink, VeilEvent } from "../../src/base/events.js";
import { InProcessEventBus } from "../../src/core/memory-bus.js";
import { RemoteMethodService } from "../../src/core/remote-methods.js";
import { allBuiltinTools as builtinTools } from "../../src/core/builtins.js";
import { defineTool } from "../../src/tools/define.js";
import { isRemoteMethods } from "../../src/tools/custom/remote-methods.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { reply } from "../helpers/fake-llm.js";

function setup() {
  const clock = new ManualClock();
  const bus = new InProcessEventBus();
  const events: VeilEvent[] = [];
  bus.subscribe({}, (e) => events.push(e));
  // The service's port: a sink that delivers at once, so each step's events can be checked in line.
  const sink: EventSink = {
    async publish(sessionId, body) {
      const event = { ...body, sessionId, ts: clock.now() } as VeilEvent;
      bus.deliver(event);
      return event;
    },
  };
  const service = new RemoteMethodService({ events: sink, clock });
  const kinds = () => events.map((e) => [e.type, (e as { id: string }).id, (e as { timedOut?: boolean }).timedOut]);
  return { clock, bus, events, service, kinds };
}

describe("RemoteMethodService", () => {
  it("publishes method.pending with the session, resolves with the first result only, then method.done", async () => {
    const { service, events } = setup();
    expect(isRemoteMethods(service)).toBe(true);
    const waiting = service.execute({ sessionId: "sess_a", method: "user-dialog", data: { question: "Continue?" } });
    const pending = events[0]!;
    expect(pending).toMatchObject({ type: "method.pending", sessionId: "sess_a", method: "user-dialog", data: { question: "Continue?" }, createdAt: "2026-01-01T00:00:00.000Z" });
    const id = (pending as { id: string }).id;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(service.pendingIds()).toEqual([id]);

    expect(service.resolve(id, { answer: "yes" })).toBe(true);
    expect(service.resolve(id, { answer: "late" })).toBe(false);
    expect(service.resolve("no-such-id", 1)).toBe(false);
    await expect(waiting).resolves.toEqual({ answer: "yes" });
    expect(events.map((e) => e.type)).toEqual(["method.pending", "method.done"]);
    expect(events[1]).toMatchObject({ type: "method.done", id, timedOut: false, sessionId: "sess_a" });
    expect(service.pendingIds()).toEqual([]);
  });

  it("times out with method.done timedOut:true and a clear rejection (default 120 s)", async () => {
    const { service, clock, kinds } = setup();
    const waiting = service.execute({ sessionId: "s", method: "confirm", data: {} });
    const outcome = waiting.then(
      () => "resolved",
      (error: Error & { code?: string }) => `${error.code}: ${error.message}`,
    );
    await clock.advance(119_999);
    expect(service.pendingIds()).toHaveLength(1);
    await clock.advance(1);
    expect(await outcome).toMatch(/^TIMEOUT: remote method "confirm" got no result within 120000 ms/);
    const id = kinds()[0]![1];
    expect(kinds()).toEqual([
      ["method.pending", id, undefined],
      ["method.done", id, true],
    ]);
    expect(service.pendingIds()).toEqual([]);
    expect(service.resolve(id as string, "too late")).toBe(false);
  });

  it("honours a per-call timeoutMs", async () => {
    const { service, clock } = setup();
    const waiting = service.execute({ sessionId: "s", method: "confirm", data: {}, timeoutMs: 30_000 });
    const failed = waiting.catch((error: Error) => error.message);
    await clock.advance(30_000);
    expect(await failed).toMatch(/within 30000 ms/);
  });

  it("an abort before the timeout (the tool's watchdog) cleans up: pending empty, method.done sent, timer gone", async () => {
    const { service, clock, kinds } = setup();
    const controller = new AbortController();
    const waiting = service.execute({ sessionId: "s", method: "ask", data: null, timeoutMs: 120_000, signal: controller.signal });
    const failed = waiting.catch((error: Error & { code?: string }) => error);
    expect(clock.pendingTimers()).toBe(1);
    controller.abort(new Error("tool timed out after 30 s"));
    const error = await failed;
    expect(error).toMatchObject({ code: "CANCELLED", message: expect.stringMatching(/tool timed out after 30 s/) });
    expect(service.pendingIds()).toEqual([]);
    expect(clock.pendingTimers()).toBe(0);
    expect(kinds().map(([type, , timedOut]) => [type, timedOut])).toEqual([
      ["method.pending", undefined],
      ["method.done", false],
    ]);
    // The remote timeout can no longer fire a second method.done.
    await clock.advance(200_000);
    expect(kinds()).toHaveLength(2);
  });

  it("an already-aborted signal rejects at once and registers nothing", async () => {
    const { service, events } = setup();
    const controller = new AbortController();
    controller.abort(new Error("gone"));
    await expect(service.execute({ sessionId: "s", method: "m", data: 1, signal: controller.signal })).rejects.toMatchObject({ code: "CANCELLED" });
    expect(events).toHaveLength(0);
    expect(service.pendingIds()).toEqual([]);
  });

  it("cancelSession ends only that session's methods; dispose ends the rest", async () => {
    const { service, events } = setup();
    const a = service.execute({ sessionId: "a", method: "m", data: 1 }).catch((e: Error) => e.message);
    const b = service.execute({ sessionId: "b", method: "m", data: 2 }).catch((e: Error) => e.message);
    expect(service.cancelSession("a")).toBe(1);
    expect(await a).toMatch(/ended: session closed/);
    expect(service.list().map((m) => m.sessionId)).toEqual(["b"]);
    service.dispose();
    expect(await b).toMatch(/server shutting down/);
    expect(events.filter((e) => e.type === "method.done")).toHaveLength(2);
  });
});

describe("remote methods in a runtime", () => {
  let h: RuntimeHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  const askTool = defineTool({
    name: "ask_ui",
    description: "Asks the UI (test tool).",
    params: Type.Object({ question: Type.String({ description: "The question." }) }),
    async execute(input, ctx) {
      const remote = ctx.services.remoteMethods;
      if (!isRemoteMethods(remote)) throw new Error("no remote methods");
      try {
        const answer = await remote.execute({ sessionId: ctx.sessionId, method: "ask", data: input, signal: ctx.signal });
        return `answer: ${JSON.stringify(answer)}`;
      } catch (error) {
        return `failed: ${(error as Error).message}`;
      }
    },
  });

  async function startAsking(h: RuntimeHarness) {
    h.llm.enqueue(reply().tool("ask_ui", { question: "Continue?" }).stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const pending = new Promise<VeilEvent>((resolve) => {
      const off = h.runtime.bus.subscribe({ types: ["method.pending"] }, (e) => {
        off();
        resolve(e);
      });
    });
    const receipt = await h.runtime.sessions.send(session.id, "ask");
    const event = await pending;
    return { session, receipt, id: (event as { id: string }).id, event };
  }

  it("a tool's answer reaches the model, and the pending event carries the session", async () => {
    h = await createRuntimeHarness({ builtins: [...builtinTools(), askTool] });
    const { session, receipt, id, event } = await startAsking(h);
    expect(event.sessionId).toBe(session.id);
    h.llm.enqueue(reply().text("thanks").stop());
    const service = h.runtime.services.remoteMethods as RemoteMethodService;
    expect(service.resolve(id, "yes")).toBe(true);
    expect((await receipt.result).content).toBe("thanks");
    expect(h.llm.completionRequests[1]!.body.messages.at(-1)).toMatchObject({ role: "tool", content: 'answer: "yes"' });
  });

  it("cancelling the session while a method is pending ends it (method.done) and unblocks the tool", async () => {
    h = await createRuntimeHarness({ builtins: [...builtinTools(), askTool] });
    const { session, receipt, id } = await startAsking(h);
    await h.runtime.sessions.cancel(session.id);
    expect((await receipt.result).stopReason).toBe("cancelled");
    const service = h.runtime.services.remoteMethods as RemoteMethodService;
    expect(service.pendingIds()).toEqual([]);
    expect(h.events.filter((e) => e.type === "method.done")).toMatchObject([{ id, timedOut: false, sessionId: session.id }]);
    expect(service.resolve(id, "late")).toBe(false);
  });

  it("closing the session while a method is pending ends it too", async () => {
    h = await createRuntimeHarness({ builtins: [...builtinTools(), askTool] });
    const { session, id } = await startAsking(h);
    await h.runtime.sessions.close(session.id);
    expect((h.runtime.services.remoteMethods as RemoteMethodService).pendingIds()).toEqual([]);
    expect(h.events.filter((e) => e.type === "method.done").map((e) => (e as { id: string }).id)).toEqual([id]);
  });
});

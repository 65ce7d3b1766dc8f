/**
 * Test helpers for the multi-agent tools: a runtime with a "boss" and a "worker" agent,
 * a fake-LLM router that picks a reply script by the request's system prompt, direct
 * tool calls from a session (as the loop makes them), and waits on bus events.
 */
import { SessionWriter } from "../../../src/core/session-writer.js";
import { buildToolContext, type ToolTurn } from "../../../src/core/tool-context.js";
import { formatThrown } from "../../../src/tools/format.js";
import type { RegisteredTool, ToolContext, ToolOutcome } from "../../../src/tools/types.js";
import { modelInfo, pickModelKey } from "../../../src/llm/models.js";
import type { MessageRow } from "../../../src/store/store.js";
import type { VeilEvent } from "../../../src/base/events.js";
import type { MultiAgentService } from "../../../src/core/agents/service.js";
import { createRuntimeHarness, type RuntimeHarness, type RuntimeHarnessOptions } from "../../helpers/runtime.js";
import { httpError, reply, type FakeReply, type FakeRequest, type FakeLlm } from "../../helpers/fake-llm.js";

export interface Route {
  enqueue(...replies: FakeReply[]): void;
}

/** Routes fake-LLM requests to per-role reply queues; unmatched or exhausted routes use their fallback. */
export function createRouter(llm: FakeLlm) {
  const routes: { match: (req: FakeRequest) => boolean; queue: FakeReply[]; fallback?: (req: FakeRequest) => FakeReply }[] = [];
  llm.respond((req) => {
    for (const route of routes) {
      if (!route.match(req)) continue;
      const next = route.queue.shift() ?? route.fallback?.(req);
      if (next) return next;
    }
    return httpError(400, { message: `test router: no scripted reply for system prompt ${systemPrompt(req).slice(0, 80)}` });
  });
  return {
    route(match: (req: FakeRequest) => boolean, fallback?: (req: FakeRequest) => FakeReply): Route {
      const route = { match, queue: [] as FakeReply[], fallback };
      routes.push(route);
      return { enqueue: (...replies) => route.queue.push(...replies) };
    },
  };
}

/** The request's system prompt: its leading system messages (prompt, then a sub-agent's objective). */
export function systemPrompt(req: FakeRequest): string {
  const messages: { role: string; content: unknown }[] = req.body?.messages ?? [];
  const leading = messages.slice(0, Math.max(0, messages.findIndex((m) => m.role !== "system")));
  return leading.map((m) => String(m.content)).join("\n\n");
}

/** The request's last message content (as text). */
export function lastMessage(req: FakeRequest): string {
  const last = req.body?.messages?.at(-1);
  return typeof last?.content === "string" ? last.content : JSON.stringify(last?.content ?? "");
}

export const BOSS_AGENT = JSON.stringify({ name: "boss", systemPrompt: "ROLE=boss" });
export const WORKER_AGENT = JSON.stringify({ name: "worker", systemPrompt: "ROLE=worker" });

export interface AgentsHarness extends RuntimeHarness {
  service: MultiAgentService;
  router: ReturnType<typeof createRouter>;
  /** Requests of the worker agent whose objective contains `objective`. */
  worker(objective: string, fallback?: (req: FakeRequest) => FakeReply): Route;
  boss: Route;
  /** A top-level boss session. */
  bossSession(): Promise<string>;
  /** Calls a tool as `sessionId` the way the loop does (validation, error rendering). */
  call(tool: RegisteredTool, sessionId: string, input: Record<string, unknown>, signal?: AbortSignal): Promise<ToolOutcome & { success: boolean }>;
  /** Resolves with the next user message stored in `sessionId` that matches. Subscribe before acting. */
  nextUserMessage(sessionId: string, match?: (content: string) => boolean): Promise<string>;
  /** Resolves on the next chat.done of `sessionId`. */
  nextDone(sessionId: string): Promise<VeilEvent>;
  messages(sessionId: string): Promise<MessageRow[]>;
  /** Resolves once `sessionId` has at least `n` undelivered inbox items (a condition wait, checked each event-loop turn). */
  untilInbox(sessionId: string, n: number): Promise<void>;
}

export async function createAgentsHarness(options: RuntimeHarnessOptions & { agents?: Record<string, object> } = {}): Promise<AgentsHarness> {
  const files: Record<string, string | Buffer> = {
    ".veil/agents/boss/agent.json": BOSS_AGENT,
    ".veil/agents/worker/agent.json": WORKER_AGENT,
    ...options.files,
  };
  for (const [name, config] of Object.entries(options.agents ?? {})) files[`.veil/agents/${name}/agent.json`] = JSON.stringify({ name, ...config });
  const h = await createRuntimeHarness({ ...options, files });
  const router = createRouter(h.llm);
  const boss = router.route((req) => systemPrompt(req).startsWith("ROLE=boss"), () => reply().text("ack").stop());
  const service = h.runtime.multiAgent;
  const { runtime } = h;

  const call: AgentsHarness["call"] = async (tool, sessionId, input, signal = new AbortController().signal) => {
    const session = await runtime.sessions.get(sessionId);
    const agent = runtime.agents()[session.agent]!;
    const modelKey = pickModelKey({ session: session.model, agent: agent.model, settings: runtime.config.settings });
    const turn: ToolTurn = {
      sessionId,
      agent,
      mode: session.mode,
      paths: runtime.config.paths,
      settings: runtime.config.settings,
      modelKey,
      model: modelInfo(modelKey, runtime.config.models),
      clock: runtime.clock,
      session: runtime.sessions.sessionResources(sessionId),
      runtime: runtime.resources,
      services: runtime.services,
      log: runtime.log,
    };
    const writer = new SessionWriter({ sessionId, store: runtime.store, events: runtime.events, ids: runtime.ids, now: () => runtime.clock.now() });
    const toolCall = { id: runtime.ids.next("call"), name: tool.name };
    const ctx: ToolContext = buildToolContext(turn, toolCall, signal, writer.toolWrites(toolCall));
    const problem = tool.validate(input);
    if (problem) return { output: `Error: VALIDATION_ERROR — ${problem}`, success: false };
    try {
      const raw = await tool.execute(input, ctx);
      const outcome = typeof raw === "string" ? { output: raw } : raw;
      return { ...outcome, success: !outcome.isError };
    } catch (error) {
      return { output: formatThrown(error).text, success: false, details: { error } };
    }
  };

  const nextUserMessage: AgentsHarness["nextUserMessage"] = (sessionId, match = () => true) =>
    new Promise((resolve) => {
      const off = runtime.bus.subscribe({ sessionId, types: ["chat.message"] }, (e) => {
        const event = e as VeilEvent & { role: string; content: string | null };
        if (event.role === "user" && match(event.content ?? "")) {
          off();
          resolve(event.content ?? "");
        }
      });
    });

  const nextDone: AgentsHarness["nextDone"] = (sessionId) =>
    new Promise((resolve) => {
      const off = runtime.bus.subscribe({ sessionId, types: ["chat.done"] }, (e) => {
        off();
        resolve(e);
      });
    });

  return {
    ...h,
    service,
    router,
    boss,
    worker: (objective, fallback) => router.route((req) => systemPrompt(req).startsWith("ROLE=worker") && systemPrompt(req).includes(objective), fallback),
    bossSession: async () => (await runtime.sessions.create({ agent: "boss" })).id,
    call,
    nextUserMessage,
    nextDone,
    messages: (sessionId) => runtime.store.listMessages(sessionId),
    async untilInbox(sessionId, n) {
      while ((await runtime.store.listInbox(sessionId)).length < n) await new Promise<void>((resolve) => setImmediate(resolve));
    },
  };
}

export function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Pulls `<tag>value</tag>` out of an envelope. */
export function tag(output: string, name: string): string | undefined {
  const match = new RegExp(`<${name}>\\n?([\\s\\S]*?)\\n?</${name}>`).exec(output);
  return match?.[1];
}

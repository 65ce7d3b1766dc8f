import type { Options, Query, SDKMessage, SDKUserMessage } from "@anthropic-ai/claude-agent-sdk";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ModelInfo, Settings } from "../../config/types.js";
import { errorMessage, isVeilError } from "../../errors.js";
import type { LlmMessage } from "../../llm/types.js";
import { ZERO_USAGE, type TokenUsage } from "../../base/usage.js";
import { addUsage, budgetStop } from "../stop-conditions.js";
import { AsyncQueue, PromptChannel, deferred } from "./channels.js";
import { NativeCalls } from "./native-calls.js";
import { MessageAssembler, type StreamEvent } from "./message-assembler.js";
import { createVeilMcpServer, type CallToolResult } from "./mcp-server.js";
import { joinedSystemPrompt } from "../system-messages.js";
import { historyPrelude, sdkCommand, toSdkUserMessage } from "./prompt.js";
import { StderrTail, type ClaudeProcesses } from "./processes.js";
import { DEFAULT_COMPACTION_THRESHOLD, childEnv, compactionThreshold, effortFor, resolveApiKey, thinkingFor } from "./sdk-options.js";
import type { RunEvent, RunIO, RunRequest, StopReason, ToolCallResult } from "../types.js";
import { MCP_SERVER_NAME, permissionFor, planTools, type ToolPlan } from "./tool-plan.js";
import { toMcpResult } from "./tool-result.js";
import type { ClaudeSdk } from "./sdk-loader.js";
import { ClaudeStructuredOutput } from "./structured-output.js";
import { describeFailure } from "./failure.js";
import type { TurnRecording } from "./recording.js";

/** The key a replaying child sends to the recording proxy, which never passes anything on. */
const REPLAY_KEY = "veil-replay";

/** How long a finished run waits for the child to exit on its own before it is ended. */
const EXIT_WAIT_MS = 3000;

export interface TurnDeps {
  sdk: ClaudeSdk;
  settings: Settings;
  env: Record<string, string | undefined>;
  workspace: string;
  model: ModelInfo;
  processes: ClaudeProcesses;
  /** Under VEIL_RECORD / VEIL_REPLAY: the recording proxy the SDK talks to instead of its base URL. */
  recording?: TurnRecording | null;
}

type Item = { event: RunEvent; onConsumed?: () => void };

/**
 * One run of a `cc/…` session through the Claude Agent SDK, as run events. The SDK
 * drives the agent loop; Veil's tools answer through the `veil` MCP server and Veil's
 * tool-call state machine (`io.executeTool`); budgets, cancel and stop requests are
 * checked at each model-call boundary and interrupt the SDK.
 */
export class ClaudeTurn {
  private readonly out = new AsyncQueue<Item>();
  private prompt = new PromptChannel<SDKUserMessage>();
  private readonly assembler = new MessageAssembler();
  private readonly stderr = new StderrTail();
  private readonly consumedCalls = new Map<string, ReturnType<typeof deferred>>();
  private readonly startedAt: number;
  private readonly natives: NativeCalls;
  private query: Query | null = null;
  private pumped: Promise<void> = Promise.resolve();
  private readonly children: number[] = [];
  /** The user messages the current query started with (sent again if it must restart fresh). */
  private sent: LlmMessage[] = [];
  private plan!: ToolPlan;
  private usage: TokenUsage = { ...ZERO_USAGE };
  private iterations = 0;
  private lastFinish = "stop";
  /** Context size of the last model call (prompt incl. cache + output). */
  private lastContext = 0;
  private compacting = false;
  private pendingCompaction: { reason: "auto" | "manual"; tokensBefore: number } | null = null;
  /** A Stop hook asked the run to go on after the model's last answer. */
  private hookContinues = false;
  private inFlightTools = 0;
  private ended = false;
  private endedWith: StopReason | null = null;
  private sdkSessionId: string | null;
  private readonly abort = new AbortController();
  /** The SDK's structured output, when the run has an output schema. */
  private readonly structured: ClaudeStructuredOutput | null;

  constructor(
    private readonly request: RunRequest,
    private readonly io: RunIO,
    private readonly deps: TurnDeps,
  ) {
    this.startedAt = io.clock.monotonic();
    this.natives = new NativeCalls(io.clock, (event) => this.emit(event));
    const stored = request.engineState?.sdkSessionId;
    this.sdkSessionId = typeof stored === "string" ? stored : null;
    this.structured = request.outputSchema ? new ClaudeStructuredOutput(request.outputSchema) : null;
  }

  async *events(): AsyncGenerator<RunEvent> {
    const onAbort = () => this.stop("cancelled");
    this.request.signal.addEventListener("abort", onAbort, { once: true });
    try {
      await this.start();
      for (;;) {
        const item = await this.out.take();
        if (!item) return;
        yield item.event;
        item.onConsumed?.();
        if (item.event.type === "run_ended") return;
      }
    } finally {
      this.request.signal.removeEventListener("abort", onAbort);
      await this.cleanup();
    }
  }

  private async start(): Promise<void> {
    if (this.request.signal.aborted) return this.end("cancelled");
    let options: Options;
    try {
      options = this.options();
    } catch (error) {
      return this.end("error", { code: isVeilError(error) ? error.code : "CONFIG_ERROR", message: errorMessage(error) });
    }
    this.openQuery(options, await this.io.nextInputs());
  }

  /**
   * Starts the SDK on what it has not seen: the messages that started the run (a resumed
   * conversation has everything before them; a fresh one gets the history as a prelude).
   */
  private openQuery(options: Options, drained: readonly LlmMessage[]): void {
    const prelude = this.sdkSessionId ? null : historyPrelude(this.request.history);
    this.prompt.push(toSdkUserMessage(drained, prelude));
    this.sent = [...drained];
    this.query = this.deps.sdk.query({ prompt: this.prompt, options });
    this.pumped = this.pump(this.query);
  }

  private options(): Options {
    const { settings, env, workspace, model } = this.deps;
    const cli = settings.claudeCli;
    const recording = this.deps.recording;
    const apiKey = recording?.replaying ? REPLAY_KEY : resolveApiKey(cli, env);
    this.request.toolset.registerAllUpFront();
    const preActivated = this.request.toolset.modeSettings().preActivatedTools;
    if (preActivated.length > 0) {
      this.io.log.info(`preActivatedTools (${preActivated.join(", ")}) has no effect on the claude-cli engine: every custom tool is registered up front`);
    }
    this.plan = planTools(this.request.toolset, cli, this.io.log);
    const server = createVeilMcpServer(this.plan.wrapped, (name, args, id) => this.callTool(name, args, id));
    const thinking = thinkingFor(this.request.reasoning);
    const effort = effortFor(this.request.reasoning);
    const options: Options = {
      model: this.request.modelKey.replace(/^cc\//, ""),
      cwd: workspace,
      env: childEnv(settings, env, model, apiKey, { threshold: this.threshold(), maxOutputTokens: this.request.maxOutputTokens, baseUrl: recording?.baseUrl }),
      systemPrompt: joinedSystemPrompt(this.request.systemPrompt, this.request.sessionBrief),
      settingSources: [],
      strictMcpConfig: true,
      tools: this.plan.natives,
      disallowedTools: this.plan.sdkDisallowed,
      mcpServers: { [MCP_SERVER_NAME]: { type: "sdk", name: MCP_SERVER_NAME, instance: server as never } },
      canUseTool: async (name, input) => permissionFor(this.plan, this.request.toolset.modeSettings(), name, input),
      permissionMode: "default",
      includePartialMessages: true,
      abortController: this.abort,
      ...(thinking ? { thinking } : {}),
      ...(effort ? { effort } : {}),
      ...(this.sdkSessionId ? { resume: this.sdkSessionId } : {}),
      ...(cli?.executable ? { pathToClaudeCodeExecutable: cli.executable } : {}),
      spawnClaudeCodeProcess: (spawnOptions) => this.deps.processes.spawn(spawnOptions, (line) => this.stderr.push(line), (pid) => this.children.push(pid)),
    };
    return this.structured?.withSdkOptions(options) ?? options;
  }

  /** The only reader of the SDK's messages; after the run ended it drains them so the child can exit. */
  private async pump(query: Query): Promise<void> {
    try {
      for await (const message of query) {
        if (!this.ended && query === this.query) await this.onMessage(message);
      }
      if (!this.ended && query === this.query) this.end(this.finalStop());
    } catch (error) {
      if (this.ended || query !== this.query) return;
      if (this.request.signal.aborted) return this.end("cancelled");
      this.end("error", { code: "LLM_ERROR", message: this.describeFailure(errorMessage(error)) });
    }
  }

  private async onMessage(message: SDKMessage): Promise<void> {
    switch (message.type) {
      case "system":
        if (message.subtype === "init") await this.rememberSession(message.session_id);
        else if (message.subtype === "status" && (message as { status?: string }).status === "requesting") await this.beforeModelCall();
        else if (message.subtype === "compact_boundary") this.onCompacted(message.compact_metadata);
        return;
      case "stream_event":
        if (message.parent_tool_use_id === null) await this.onStreamEvent(message.event as StreamEvent);
        return;
      case "user": {
        this.natives.finish(message.message.content);
        const repair = this.structured?.repairOf(message);
        if (repair) this.emit(repair);
        return;
      }
      case "result":
        return this.onResult(message);
      default:
        return;
    }
  }

  private async rememberSession(id: string): Promise<void> {
    if (id === this.sdkSessionId) return;
    this.sdkSessionId = id;
    await this.io.saveEngineState({ sdkSessionId: id });
  }

  private async beforeModelCall(): Promise<void> {
    const reason = await this.boundaryStop();
    if (reason) return this.stop(reason);
    this.iterations++;
  }

  /** Why the run must stop before its next model call (cancel, a stop request, a budget), or null. */
  private async boundaryStop(): Promise<StopReason | null> {
    if (this.request.signal.aborted) return "cancelled";
    const requested = this.io.stopRequested();
    if (requested) return requested;
    return budgetStop(await this.request.budget(), {
      iterations: this.iterations,
      startedAt: this.startedAt,
      now: this.io.clock.monotonic(),
      sessionUsage: addUsage(this.request.usageBefore, this.usage),
    });
  }

  /** The SDK compacted its conversation (Veil's /compact at the threshold, or its own): session.compacted. */
  private onCompacted(metadata: { trigger: "manual" | "auto"; pre_tokens: number; post_tokens?: number }): void {
    this.io.log.info("claude-cli: the SDK compacted its conversation", { sessionId: this.request.sessionId, ...metadata });
    const tokensBefore = metadata.pre_tokens || this.lastContext;
    // Older binaries send no post_tokens: the next model call's prompt size tells the new size then.
    this.pendingCompaction = { reason: this.compacting || metadata.trigger === "auto" ? "auto" : "manual", tokensBefore };
    if (metadata.post_tokens !== undefined) this.emitCompaction(metadata.post_tokens);
  }

  private emitCompaction(tokensAfter: number): void {
    const pending = this.pendingCompaction;
    if (!pending) return;
    this.pendingCompaction = null;
    this.emit({ type: "context_compacted", reason: pending.reason, tokensBefore: pending.tokensBefore, tokensAfter });
  }

  private async onStreamEvent(event: StreamEvent): Promise<void> {
    if (event.type === "message_start") this.emit({ type: "model_call_started", model: this.request.modelKey });
    for (const runEvent of this.assembler.accept(event)) {
      if (runEvent.type === "tool_call_started" && this.isNative(runEvent.name)) this.natives.announce(runEvent.id);
      this.emit(runEvent);
    }
    if (event.type !== "message_stop") return;
    const { message, finishReason, usage } = this.assembler.finish();
    this.usage = addUsage(this.usage, usage);
    this.lastContext = usage.prompt_tokens + usage.completion_tokens;
    this.lastFinish = finishReason;
    this.emit({ type: "model_usage", usage });
    this.emitCompaction(usage.prompt_tokens);
    let final = message.toolCalls.length === 0 && !this.io.hasPendingInput();
    // A Stop hook may continue the run (its message arrives through nextInputs at the result).
    if (final && finishReason === "stop" && !this.compacting && this.io.runEnding && !this.request.signal.aborted && (await this.io.runEnding())) {
      final = false;
      this.hookContinues = true;
    }
    for (const call of message.toolCalls) this.structured?.noteCall(call);
    const natives = message.toolCalls.filter((call) => this.isNative(call.name));
    // The CLI would ask the model to go on after max_tokens; Veil ends the run with "length" (as on openai).
    const cut = final && finishReason === "length";
    const recorded = message.toolCalls.map((call) => this.consumed(call.id));
    this.emit({ type: "assistant_message", message, finishReason, usage, final }, () => {
      if (cut) this.stop("length");
      for (const entry of recorded) entry.resolve();
      for (const call of natives) this.natives.start(call);
    });
  }

  /** A call the SDK runs itself: a kept native tool, or the StructuredOutput tool of an output schema. */
  private isNative(name: string): boolean {
    return this.plan.natives.includes(name) || (this.structured?.ownsTool(name) ?? false);
  }

  /** Resolves once the assistant message holding this tool call has been recorded. */
  private consumed(id: string): ReturnType<typeof deferred> {
    let entry = this.consumedCalls.get(id);
    if (!entry) this.consumedCalls.set(id, (entry = deferred()));
    return entry;
  }

  private async callTool(name: string, args: Record<string, unknown>, toolUseId: string | undefined): Promise<CallToolResult> {
    if (this.ended) return { content: [{ type: "text", text: "Error: CANCELLED — the run has ended" }], isError: true };
    const id = toolUseId ?? `call_${name}_${this.io.clock.now()}`;
    // The CLI calls a tool as soon as its block is complete; Veil records the assistant message first.
    if (toolUseId) await this.consumed(toolUseId).promise;
    this.inFlightTools++;
    try {
      let result: ToolCallResult | undefined;
      // The call's events go into the run's stream; each step waits until its event was taken.
      for await (const event of this.io.executeTool({ id, name, arguments: JSON.stringify(args) })) {
        await this.emitAndWait(event);
        if (event.type === "tool_finished") result = event.result;
      }
      if (!result) return { content: [{ type: "text", text: "Error: INTERNAL_ERROR — the tool call ended without a result" }], isError: true };
      return await toMcpResult(result, join(tmpdir(), "veil-claude-attachments", this.request.sessionId));
    } finally {
      this.inFlightTools--;
      // The model's next call follows the last result: stop here rather than after it starts.
      if (this.inFlightTools === 0 && !this.ended) {
        const reason = await this.boundaryStop();
        if (reason) this.stop(reason);
      }
    }
  }

  private async onResult(message: Extract<SDKMessage, { type: "result" }>): Promise<void> {
    // The turn's last tool call may be one the SDK answered itself (StructuredOutput ends the
    // turn with no further model call): its result event follows its message's, which the
    // run may not have taken yet. run_ended must come after them.
    await Promise.all([...this.consumedCalls.values()].map((entry) => entry.promise));
    if (message.is_error) {
      const text = "result" in message && typeof message.result === "string" ? message.result : message.subtype === "success" ? "" : message.errors.join("; ");
      if (this.iterations === 0 && this.sdkSessionId && /no conversation found/i.test(text)) return this.restartFresh();
      if (this.structured && message.subtype === "error_max_structured_output_retries") {
        const { event, error } = this.structured.exhausted(message);
        this.emit(event);
        return this.end("error", error);
      }
      return this.end("error", { code: "LLM_ERROR", message: this.describeFailure(text || message.subtype) });
    }
    // The answer of this SDK turn (a /compact command's turn has none).
    if (!this.compacting) this.structured?.noteResult(message);
    // Between SDK turns: deliver what arrived meanwhile, in order, else the run is over.
    if (this.io.hasPendingInput() || this.hookContinues) {
      this.hookContinues = false;
      const reason = await this.boundaryStop();
      if (reason) return this.stop(reason);
      this.prompt.push(toSdkUserMessage(await this.io.nextInputs()));
      return;
    }
    if (this.needsCompaction()) {
      // Auto-compaction on this engine is the SDK's own /compact, fired at Veil's threshold.
      this.compacting = true;
      this.prompt.push(sdkCommand("/compact"));
      return;
    }
    const answer = this.structured?.finish();
    if (answer) this.emit(answer.event);
    if (answer?.error) return this.end("error", answer.error);
    this.end(this.finalStop());
  }

  /** The stored SDK conversation is gone (another machine, a wiped home): start a new one seeded with the history. */
  private restartFresh(): void {
    this.io.log.warn(`claude-cli: SDK conversation ${this.sdkSessionId} not found; starting a new one with this session's history as context`, { sessionId: this.request.sessionId });
    const old = this.query;
    this.sdkSessionId = null;
    this.prompt.end();
    this.prompt = new PromptChannel<SDKUserMessage>();
    this.query = null;
    old?.close();
    // A new MCP server too: one instance serves one connection.
    this.openQuery(this.options(), this.sent);
  }

  /** The context_size of the last call at or above autoThreshold of the model's window. */
  private needsCompaction(): boolean {
    if (this.compacting || this.lastContext === 0) return false;
    return this.lastContext >= this.threshold() * this.deps.model.context_window;
  }

  /** Agent over settings (the session's resolved compaction), else settings, else the default. */
  private threshold(): number {
    return this.request.compactThreshold ?? compactionThreshold(this.deps.settings) ?? DEFAULT_COMPACTION_THRESHOLD;
  }

  private finalStop(): StopReason {
    return this.lastFinish === "length" ? "length" : this.lastFinish === "content_filter" ? "content_filter" : "stop";
  }

  /** Under VEIL_REPLAY, a request the recording does not hold: the run ends with REPLAY_MISMATCH naming the difference. */
  replayMismatch(message: string): void {
    if (this.ended) return;
    void this.query?.interrupt().catch(() => undefined);
    this.end("error", { code: "REPLAY_MISMATCH", message });
  }

  /** Stops the run now: interrupts the SDK, keeps text already streamed. */
  private stop(reason: StopReason): void {
    if (this.ended) return;
    if (this.assembler.inProgress) {
      const partial = this.assembler.partial();
      if (partial.content) {
        const usage = this.assembler.usageSoFar();
        this.emit({ type: "assistant_message", message: { ...partial, toolCalls: [] }, finishReason: reason === "cancelled" ? "cancelled" : reason, usage, final: false });
      }
    }
    void this.query?.interrupt().catch(() => undefined);
    this.end(reason);
  }

  private end(stopReason: StopReason, error?: { code: string; message: string }): void {
    if (this.ended) return;
    this.ended = true;
    this.endedWith = stopReason;
    this.prompt.end();
    this.natives.stopAll();
    for (const entry of this.consumedCalls.values()) entry.resolve();
    this.emit({ type: "run_ended", stopReason, ...(error ? { error } : {}) }, undefined, true);
    this.out.close();
  }

  private emit(event: RunEvent, onConsumed?: () => void, force = false): void {
    if (this.ended && !force) return;
    this.out.push({ event, onConsumed });
  }

  /** Resolves once the run's consumer took the event (at once when the turn has ended and drops it). */
  private emitAndWait(event: RunEvent): Promise<void> {
    if (this.ended) return Promise.resolve();
    return new Promise((resolve) => this.out.push({ event, onConsumed: resolve }));
  }

  private describeFailure(text: string): string {
    return describeFailure(text, this.deps.settings.claudeCli, this.stderr.text());
  }

  private async cleanup(): Promise<void> {
    this.ended = true;
    // Events nobody will take now: whoever waits for them (a tool call's next step) goes on.
    for (const item of this.out.drain()) item.onConsumed?.();
    this.prompt.end();
    const query = this.query;
    if (!query) return;
    // After a normal end, let the child finish writing its transcript (needed to resume) and
    // exit on its own; after a cancel, a stop or a failure, end it at once.
    if (this.endedWith === "stop") {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.pumped, new Promise<void>((resolve) => (timer = setTimeout(resolve, EXIT_WAIT_MS)))]);
      clearTimeout(timer);
    }
    query.close();
    this.abort.abort();
    await this.deps.processes.endPids(this.children);
  }
}

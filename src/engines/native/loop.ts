import { ZERO_USAGE } from "../../base/usage.js";
import type { TokenUsage } from "../../base/usage.js";
import { reportedError } from "../../llm/reported-error.js";
import type { AssistantMessage, LlmClient, LlmError, LlmMessage, LlmRequest, StreamEvent, ToolCallRequest } from "../../llm/types.js";
import { formatToolError } from "../../tools/format.js";
import { toolResultContent } from "../../tools/result-content.js";
import { addUsage, budgetStop } from "../stop-conditions.js";
import { runToolCalls } from "../tool-events.js";
import { systemMessages } from "../system-messages.js";
import type { Engine, RunEvent, RunIO, RunRequest, StopReason, ToolCallResult } from "../types.js";
import { OutputGuard } from "./output-guard.js";

/** Veil's own loop over an OpenAI-compatible provider: it owns no store, bus or multi-agent state. */
export function createNativeEngine(deps: { llm: LlmClient }): Engine {
  return {
    name: "openai",
    handles: () => true,
    checkReady: async (modelKey) => deps.llm.checkReady?.(modelKey),
    run: (request, io) => runNativeLoop(request, io, deps.llm),
  };
}

/**
 * One run: model call → tool calls (in parallel, but one after another on a shared path; their
 * events in the run's stream) → results → repeat, until the model stops
 * or a limit stops it. Everything it does is reported as events; the recorder stores them
 * before the loop goes on (an async generator waits for its consumer).
 */
export async function* runNativeLoop(request: RunRequest, io: RunIO, llm: LlmClient): AsyncGenerator<RunEvent> {
  const messages: LlmMessage[] = [...systemMessages(request.systemPrompt, request.sessionBrief), ...request.history];
  const startedAt = io.clock.monotonic();
  let usage: TokenUsage = { ...ZERO_USAGE };
  let iterations = 0;
  const guard = request.outputSchema ? new OutputGuard(request.outputSchema) : null;
  const ended = (stopReason: StopReason, error?: { code: string; message: string }): RunEvent => ({
    type: "run_ended",
    stopReason,
    ...(error ? { error: { code: error.code, message: error.message } } : {}),
  });

  for (;;) {
    messages.push(...(await io.nextInputs()));
    if (request.signal.aborted) return yield ended("cancelled");
    const requested = io.stopRequested();
    if (requested) return yield ended(requested);
    const limit = budgetStop(await request.budget(), {
      iterations,
      startedAt,
      now: io.clock.monotonic(),
      sessionUsage: addUsage(request.usageBefore, usage),
    });
    if (limit) return yield ended(limit);

    iterations++;
    const context = io.modelContext ? await io.modelContext() : messages;
    const view = guard ? guard.view(context) : context;
    let outcome: StreamOutcome | undefined;
    for await (const event of callModel(view, request, io, llm, guard?.nextCall())) {
      if ("kind" in event) outcome = event;
      else yield event;
    }
    const response = outcome!;
    usage = addUsage(usage, response.usage);

    if (response.kind === "error") {
      const cancelled = response.error.code === "CANCELLED";
      // Keep the text the user already saw; unexecuted tool calls are dropped.
      if (response.message.content) {
        yield { type: "assistant_message", message: { ...response.message, toolCalls: [] }, finishReason: cancelled ? "cancelled" : "error", usage: response.usage, final: false };
      }
      return yield cancelled ? ended("cancelled") : ended("error", reportedError(response.error));
    }

    const { message, finishReason } = response;
    const calls = message.toolCalls;
    let final = calls.length === 0 && !io.hasPendingInput();
    // Under an output schema a final answer that does not match asks for another.
    const verdict = final && guard ? guard.judge(message.content) : undefined;
    if (verdict?.kind === "repair") final = false;
    // A Stop hook may continue the run: its message then arrives through nextInputs().
    if (final && verdict?.kind !== "mismatch" && finishReason === "stop" && io.runEnding && !request.signal.aborted && (await io.runEnding())) final = false;
    yield { type: "assistant_message", message, finishReason, usage: response.usage, final };
    messages.push({ role: "assistant", content: message.content, thinking: message.thinking, toolCalls: calls.length ? calls : undefined });
    if (verdict?.kind === "repair") {
      yield { type: "output_repair", content: verdict.request };
      messages.push({ role: "user", content: verdict.request });
      continue;
    }

    if (calls.length === 0) {
      if (final && verdict?.kind === "mismatch") return yield ended("error", verdict.error);
      if (final && verdict?.kind === "accept") yield { type: "structured_output", content: message.content, value: verdict.value };
      if (final) return yield ended(finishReason === "length" ? "length" : finishReason === "content_filter" ? "content_filter" : "stop");
      continue;
    }

    const results: ToolCallResult[] = [];
    if (finishReason === "length") {
      // A response cut off by max_tokens may hold a half-written call: run none of them.
      for (const call of calls) {
        const result = truncatedCall(call);
        yield { type: "tool_started", call, input: {} };
        yield { type: "tool_finished", result, input: {} };
        results.push(result);
      }
    } else {
      results.push(...(yield* runToolCalls(calls, io, (call) => request.toolset.touches(call))));
    }
    for (const result of results) {
      messages.push({ role: "tool", toolCallId: result.call.id, content: toolResultContent(result.output, result.attachments) });
    }
    if (request.signal.aborted) return yield ended("cancelled");
  }
}

/**
 * One model call, with the runtime's overflow recovery: a "prompt too long" answer before
 * any output is compacted by io and retried once; refused again, the call fails with the
 * error io names (CONTEXT_OVERFLOW). Usage of every attempt is reported.
 */
async function* callModel(view: LlmMessage[], request: RunRequest, io: RunIO, llm: LlmClient, outputSchema?: LlmRequest["outputSchema"]): AsyncGenerator<RunEvent | StreamOutcome> {
  for (let retried = false; ; retried = true) {
    let outcome: StreamOutcome | undefined;
    let produced = false;
    for await (const event of streamOnce(view, request, llm, outputSchema)) {
      if ("kind" in event) outcome = event;
      else {
        if (event.type !== "model_call_started") produced = true;
        yield event;
      }
    }
    const response = outcome!;
    if (response.usage.total_tokens > 0 || response.usage.prompt_tokens > 0) yield { type: "model_usage", usage: response.usage, ...(response.model ? { model: response.model } : {}) };
    if (response.kind === "done" || produced || !io.modelCallFailed || response.error.code === "CANCELLED") return yield response;
    const recovery = await io.modelCallFailed(response.error, retried);
    if (!recovery) return yield response;
    if ("fail" in recovery) {
      return yield { ...response, usage: { ...ZERO_USAGE }, error: { code: recovery.fail.code as LlmError["code"], message: recovery.fail.message, retryable: false } };
    }
    if (retried) return yield response;
    view = recovery.retry;
  }
}

function truncatedCall(call: ToolCallRequest): ToolCallResult {
  return {
    call,
    output: formatToolError(
      "OUTPUT_TRUNCATED",
      `your response hit the output token limit while writing this call to "${call.name}", so it was not run. Send it again with smaller arguments (split a large write into several edits).`,
    ),
    success: false,
    state: "error",
    durationMs: 0,
  };
}

type StreamOutcome =
  | { kind: "done"; message: AssistantMessage; finishReason: string; usage: TokenUsage; model?: string }
  | { kind: "error"; error: LlmError; message: AssistantMessage; usage: TokenUsage; model?: string };

/** How long after a model request the turn's tool warm-up starts when its client does not say it was sent (see streamOnce). */
const WARM_UP_DELAY_MS = 5;

/** A stream event as the run event it relays, if any. */
function runEvent(event: StreamEvent): RunEvent | undefined {
  switch (event.type) {
    case "text":
      return { type: "text_delta", delta: event.delta };
    case "thinking":
      return { type: "thinking_delta", delta: event.delta };
    case "tool_call_start":
      return { type: "tool_call_started", id: event.id, name: event.name };
    default:
      return undefined;
  }
}

async function* streamOnce(messages: LlmMessage[], request: RunRequest, llm: LlmClient, outputSchema?: LlmRequest["outputSchema"]): AsyncGenerator<RunEvent | StreamOutcome> {
  let ended: Extract<StreamEvent, { type: "done" | "error" }> | undefined;
  yield { type: "model_call_started", model: request.modelKey };
  // Once the request is out, the first tool calls' start-up work (a shell to spawn, a sandbox
  // to probe) overlaps the model's time to answer, off the request's own path (connect, send):
  // it starts when the provider says the request was sent (a provider that will say so says
  // it as it starts sending, which stops the timer), or after WARM_UP_DELAY_MS from a client
  // that does not say. A stream over before then needed no warm-up: the next one of the turn
  // may still use it.
  let sentWarmUp: NodeJS.Immediate | undefined;
  const warmUpNow = () => {
    clearTimeout(warmUp);
    sentWarmUp ??= setImmediate(() => request.toolset.warmUp());
  };
  const warmUp = setTimeout(() => request.toolset.warmUp(), WARM_UP_DELAY_MS);
  const stream = llm.stream({
    modelKey: request.modelKey,
    messages,
    tools: request.toolset.specs(),
    reasoning: request.reasoning,
    maxTokens: request.maxOutputTokens,
    signal: request.signal,
    onSending: () => clearTimeout(warmUp),
    onSent: warmUpNow,
    ...(outputSchema ? { outputSchema } : {}),
  });
  try {
    for await (const event of stream) {
      const delta = runEvent(event);
      if (delta) yield delta;
      else if (event.type === "done" || event.type === "error") ended = event;
    }
  } finally {
    clearTimeout(warmUp);
    if (sentWarmUp) clearImmediate(sentWarmUp);
  }
  const final = ended as Extract<StreamEvent, { type: "done" | "error" }> | undefined;
  if (!final) {
    yield { kind: "error", error: { code: "LLM_ERROR", message: "the model stream ended without a result", retryable: false }, message: { content: null, thinking: null, toolCalls: [] }, usage: { ...ZERO_USAGE } };
  } else if (final.type === "error") {
    yield { kind: "error", error: final.error, message: final.partial, usage: final.usage, model: final.model };
  } else {
    yield { kind: "done", message: final.message, finishReason: final.finishReason, usage: final.usage, model: final.model };
  }
}

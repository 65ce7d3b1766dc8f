/**
 * Traces of turns over OTLP/HTTP with the OpenTelemetry SDK, named and attributed by the
 * GenAI semantic conventions: `invoke_agent <agent>` per turn, `chat <model>` per model call
 * and `execute_tool <tool>` per tool call as its children. Spans go out in batches from a
 * queue (a run never waits on the collector); a collector that cannot be reached is logged
 * once, until it answers again. This module is loaded only when traces are configured.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, defaultTextMapGetter, defaultTextMapSetter, type Context, type Span, type SpanContext, type Tracer } from "@opentelemetry/api";
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import type { Logger } from "../../base/log.js";
import { errorMessage } from "../../errors.js";
import type { RunEvent, RunResult } from "../../engines/types.js";
import { VERSION } from "../../version.js";
import type { Telemetry, TurnParent, TurnPlan, TurnStart, TurnTelemetry } from "./types.js";

export interface TracesConfig {
  /** Full URL of the traces endpoint (`…/v1/traces`). */
  url: string;
  protocol: "http/protobuf" | "http/json";
  headers: Record<string, string>;
  serviceName: string;
  /** Longest wait before queued spans are sent. */
  scheduledDelayMs: number;
  /** How long one export may take, its retries included. */
  exportTimeoutMs: number;
}

/** Sub-agent turns find the tool call that sent their message among this many recent calls. */
const REMEMBERED_CALLS = 10_000;
/** A shutdown waits this long for a last export to a collector that does not answer. */
const CLOSE_WAIT_MS = 3_000;

export async function createTracing(config: TracesConfig, log: Logger): Promise<Telemetry> {
  const exporter = new WarningExporter(await otlpExporter(config), config.url, log);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": config.serviceName, "service.version": VERSION }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: config.scheduledDelayMs, exportTimeoutMillis: config.exportTimeoutMs })],
  });
  const spans = new SpanIndex(provider.getTracer("veil", VERSION));
  return {
    turnStarted: (start) => spans.turn(start),
    traceparentOf: (parent) => spans.traceparentOf(parent),
    async close() {
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)));
      await Promise.race([provider.shutdown().catch((error) => log.warn("telemetry: trace shutdown failed", { error: errorMessage(error) })), waited]);
      clearTimeout(timer);
    },
  };
}

async function otlpExporter(config: TracesConfig): Promise<SpanExporter> {
  const options = { url: config.url, headers: config.headers, timeoutMillis: config.exportTimeoutMs };
  if (config.protocol === "http/json") {
    const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
    return new OTLPTraceExporter(options);
  }
  const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-proto");
  return new OTLPTraceExporter(options);
}

/** The exporter, logging when exports start failing and when they work again (not each failure). */
class WarningExporter implements SpanExporter {
  private failing = false;

  constructor(
    private readonly inner: SpanExporter,
    private readonly url: string,
    private readonly log: Logger,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      if (result.code !== ExportResultCode.SUCCESS && !this.failing) {
        this.failing = true;
        this.log.warn("telemetry: traces cannot be sent to the collector; spans are dropped until it answers", { url: this.url, error: result.error ? errorMessage(result.error) : "export failed" });
      } else if (result.code === ExportResultCode.SUCCESS && this.failing) {
        this.failing = false;
        this.log.info("telemetry: the collector answers again", { url: this.url });
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/** The live turns and recent tool calls, so a sub-agent's turn hangs under the call that started it. */
class SpanIndex {
  private readonly calls = new Map<string, SpanContext>();
  private readonly turns = new Map<string, SpanContext>();
  private readonly propagator = new W3CTraceContextPropagator();

  constructor(readonly tracer: Tracer) {}

  turn(start: TurnStart): TurnTelemetry {
    const span = this.tracer.startSpan("invoke_agent", { kind: SpanKind.INTERNAL, attributes: { "gen_ai.operation.name": "invoke_agent", "veil.session_id": start.sessionId } }, this.parentContext(start.parent));
    this.turns.set(start.sessionId, span.spanContext());
    return new TurnTrace(this, span, start);
  }

  callStarted(callId: string, span: Span): void {
    this.calls.set(callId, span.spanContext());
    // A Map keeps insertion order: the first key is the oldest call.
    if (this.calls.size > REMEMBERED_CALLS) this.calls.delete(this.calls.keys().next().value!);
  }

  turnEnded(sessionId: string, span: Span): void {
    if (this.turns.get(sessionId)?.spanId === span.spanContext().spanId) this.turns.delete(sessionId);
  }

  traceparentOf(parent: TurnParent): string | null {
    if ("traceparent" in parent) return parent.traceparent;
    const carrier: { traceparent?: string } = {};
    this.propagator.inject(this.parentContext(parent), carrier, defaultTextMapSetter);
    return carrier.traceparent ?? null;
  }

  private parentContext(parent: TurnParent | null): Context {
    if (!parent) return ROOT_CONTEXT;
    if ("traceparent" in parent) return this.propagator.extract(ROOT_CONTEXT, { traceparent: parent.traceparent }, defaultTextMapGetter);
    const spanContext = (parent.toolCallId ? this.calls.get(parent.toolCallId) : undefined) ?? this.turns.get(parent.sessionId);
    return spanContext ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
  }
}

/** One turn's spans, built from its events. */
class TurnTrace implements TurnTelemetry {
  private readonly context: Context;
  private readonly tools = new Map<string, Span>();
  private chat: Span | null = null;
  private modelKey = "";

  constructor(
    private readonly index: SpanIndex,
    private readonly span: Span,
    private readonly start: TurnStart,
  ) {
    this.context = trace.setSpan(ROOT_CONTEXT, span);
  }

  prepared(plan: TurnPlan): void {
    this.modelKey = plan.modelKey;
    this.span.updateName(`invoke_agent ${plan.agent}`);
    this.span.setAttributes({ "gen_ai.agent.name": plan.agent, "gen_ai.request.model": plan.modelKey, "veil.engine": plan.engine });
  }

  event(event: RunEvent): void {
    switch (event.type) {
      case "model_call_started":
        // A call sent again (after compacting an overflowing prompt) replaces the one that failed.
        this.endChat("the call failed and was sent again");
        this.chat = this.startChat(event.model);
        return;
      case "model_usage": {
        const chat = (this.chat ??= this.startChat(this.modelKey));
        const { usage } = event;
        chat.setAttributes({
          "gen_ai.usage.input_tokens": usage.prompt_tokens,
          "gen_ai.usage.output_tokens": usage.completion_tokens,
          "gen_ai.usage.cache_read.input_tokens": usage.cached_tokens,
          "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_tokens,
          "veil.usage.reasoning_tokens": usage.reasoning_tokens,
          ...(event.model ? { "gen_ai.response.model": event.model } : {}),
        });
        const cost = this.start.costOf(usage, event.model ?? this.modelKey);
        if (cost !== null) chat.setAttribute("veil.cost_usd", cost);
        return;
      }
      case "assistant_message":
        this.chat?.setAttribute("gen_ai.response.finish_reasons", [event.finishReason]);
        this.endChat(null);
        return;
      case "tool_started":
        return this.toolStarted(event.call.id, event.call.name);
      case "tool_finished":
        return this.toolFinished(event.result.call.id, event.result.success, event.result.output);
      case "run_ended":
        this.endChat(event.error ? `${event.error.code}: ${event.error.message}` : null, event.error?.code);
        return;
      default:
        return;
    }
  }

  ended(result: RunResult): void {
    this.endChat(result.error ? result.error.message : null, result.error?.code);
    for (const [id] of this.tools) this.toolFinished(id, false, `the turn ended (${result.stopReason}) before the call did`);
    const { usage } = result;
    this.span.setAttributes({
      "gen_ai.usage.input_tokens": usage.prompt_tokens,
      "gen_ai.usage.output_tokens": usage.completion_tokens,
      "gen_ai.usage.cache_read.input_tokens": usage.cached_tokens,
      "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_tokens,
      "veil.stop_reason": result.stopReason,
      "veil.iterations": result.iterations,
      ...(result.costUsd !== undefined ? { "veil.cost_usd": result.costUsd } : {}),
    });
    if (result.error) this.failed(this.span, result.error.message, result.error.code);
    this.span.end();
    this.index.turnEnded(this.start.sessionId, this.span);
  }

  private startChat(model: string): Span {
    return this.index.tracer.startSpan(
      `chat ${model}`,
      { kind: SpanKind.CLIENT, attributes: { "gen_ai.operation.name": "chat", "gen_ai.request.model": model, "veil.session_id": this.start.sessionId } },
      this.context,
    );
  }

  private endChat(error: string | null, code?: string): void {
    const chat = this.chat;
    if (!chat) return;
    this.chat = null;
    if (error) this.failed(chat, error, code);
    chat.end();
  }

  private toolStarted(id: string, name: string): void {
    const span = this.index.tracer.startSpan(
      `execute_tool ${name}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": id, "gen_ai.tool.type": "function", "veil.session_id": this.start.sessionId },
      },
      this.context,
    );
    this.tools.set(id, span);
    this.index.callStarted(id, span);
  }

  private toolFinished(id: string, success: boolean, output: string): void {
    const span = this.tools.get(id);
    if (!span) return;
    this.tools.delete(id);
    if (!success) this.failed(span, firstLine(output), /^Error: ([A-Z_]+) —/.exec(output)?.[1]);
    span.end();
  }

  private failed(span: Span, message: string, code?: string): void {
    span.setStatus({ code: SpanStatusCode.ERROR, message });
    span.setAttribute("error.type", code ?? "error");
  }
}

function firstLine(text: string): string {
  const line = text.split("\n", 1)[0] ?? "";
  return line.length > 500 ? `${line.slice(0, 500)}…` : line;
}

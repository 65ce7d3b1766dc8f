/**
 * Prometheus metrics of a serving runtime (prom-client), on a registry of its own: two
 * runtimes in one process (tests, embedders) never share counters.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { RunEvent, RunResult } from "../../engines/types.js";
import type { Telemetry, TurnTelemetry } from "./types.js";

export interface MetricsOptions {
  /** Sessions open in this process now (read at each scrape). */
  liveSessions(): number;
  /** Monotonic milliseconds, for turn durations. */
  monotonic(): number;
}

/** Token kinds of veil_llm_tokens_total: input counts every prompt token, cached ones included. */
const TOKEN_KINDS = [
  ["input", "prompt_tokens"],
  ["output", "completion_tokens"],
  ["cache_read", "cached_tokens"],
  ["cache_write", "cache_creation_tokens"],
  ["reasoning", "reasoning_tokens"],
] as const;

export class VeilMetrics implements Telemetry {
  readonly registry = new Registry();
  private readonly turns = new Counter({ name: "veil_turns_total", help: "Turns that ended, by stop reason.", labelNames: ["stop_reason"], registers: [this.registry] });
  private readonly toolCalls = new Counter({ name: "veil_tool_calls_total", help: "Tool calls that ended, by tool and status (done, error, cancelled).", labelNames: ["tool", "status"], registers: [this.registry] });
  private readonly tokens = new Counter({ name: "veil_llm_tokens_total", help: "Model tokens by kind (input, output, cache_read, cache_write, reasoning).", labelNames: ["kind"], registers: [this.registry] });
  private readonly modelCalls = new Counter({ name: "veil_llm_calls_total", help: "Model calls of turns that reported usage.", registers: [this.registry] });
  private readonly cost = new Counter({ name: "veil_llm_cost_usd_total", help: "Spend of turns' model calls in USD at models.json prices.", registers: [this.registry] });
  private readonly providerErrors = new Counter({ name: "veil_provider_errors_total", help: "Model calls that failed, by error code (after retries and fallbacks).", labelNames: ["code"], registers: [this.registry] });
  private readonly turnDuration = new Histogram({
    name: "veil_turn_duration_seconds",
    help: "Wall time of a turn, from its start to its end.",
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    registers: [this.registry],
  });
  private readonly sse = new Gauge({ name: "veil_sse_clients", help: "SSE streams open now.", registers: [this.registry] });

  constructor(private readonly options: MetricsOptions) {
    const live = options.liveSessions;
    new Gauge({
      name: "veil_sessions_live",
      help: "Sessions open (not closed) in this process.",
      registers: [this.registry],
      collect() {
        this.set(live());
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: "veil_process_" });
  }

  turnStarted(): TurnTelemetry {
    const startedAt = this.options.monotonic();
    return {
      prepared: () => undefined,
      event: (event) => this.event(event),
      ended: (result) => this.ended(result, startedAt),
    };
  }

  modelCallFailed(code: string): void {
    this.providerErrors.inc({ code });
  }

  sseOpened(): void {
    this.sse.inc();
  }

  sseClosed(): void {
    this.sse.dec();
  }

  /** The registry in Prometheus' text format. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  async close(): Promise<void> {
    this.registry.clear();
  }

  private event(event: RunEvent): void {
    if (event.type === "tool_finished") this.toolCalls.inc({ tool: event.result.call.name, status: event.result.state });
    else if (event.type === "model_usage") {
      this.modelCalls.inc();
      for (const [kind, field] of TOKEN_KINDS) if (event.usage[field] > 0) this.tokens.inc({ kind }, event.usage[field]);
    }
  }

  private ended(result: RunResult, startedAt: number): void {
    this.turns.inc({ stop_reason: result.stopReason });
    this.turnDuration.observe(Math.max(0, this.options.monotonic() - startedAt) / 1000);
    if (result.costUsd) this.cost.inc(result.costUsd);
  }
}

/**
 * The Prometheus side of a serving runtime's metrics (prom-client), on a registry of its
 * own: two runtimes in one process (tests, embedders) never share counters. Loaded by
 * metrics.ts at the first scrape, not at start.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { CounterName, MetricsOptions, MetricsSink } from "./metrics.js";

export class PromMetrics implements MetricsSink {
  readonly registry = new Registry();
  private readonly counters: Record<CounterName, Counter>;
  private readonly turnDuration = new Histogram({
    name: "veil_turn_duration_seconds",
    help: "Wall time of a turn, from its start to its end.",
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    registers: [this.registry],
  });
  private readonly sse = new Gauge({ name: "veil_sse_clients", help: "SSE streams open now.", registers: [this.registry] });

  constructor(options: MetricsOptions) {
    const counter = (name: string, help: string, labelNames: string[] = []) => new Counter({ name, help, labelNames, registers: [this.registry] });
    this.counters = {
      turns: counter("veil_turns_total", "Turns that ended, by stop reason.", ["stop_reason"]),
      toolCalls: counter("veil_tool_calls_total", "Tool calls that ended, by tool and status (done, error, cancelled).", ["tool", "status"]),
      tokens: counter("veil_llm_tokens_total", "Model tokens by kind (input, output, cache_read, cache_write, reasoning).", ["kind"]),
      modelCalls: counter("veil_llm_calls_total", "Model calls of turns that reported usage."),
      cost: counter("veil_llm_cost_usd_total", "Spend of turns' model calls in USD at models.json prices."),
      providerErrors: counter("veil_provider_errors_total", "Model calls that failed, by error code (after retries and fallbacks).", ["code"]),
    };
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

  count(counter: CounterName, labels: Record<string, string>, by: number): void {
    this.counters[counter].inc(labels, by);
  }

  observeTurn(seconds: number): void {
    this.turnDuration.observe(seconds);
  }

  sseClients(delta: number): void {
    this.sse.inc(delta);
  }

  /** The registry in Prometheus' text format. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  close(): void {
    this.registry.clear();
  }
}

/**
 * The metrics of a serving runtime (GET /metrics). prom-client is loaded by the first
 * scrape, not at start: until then the counts are kept here (a few numbers per label set),
 * and handed to the Prometheus registry (prometheus.ts) when it is made, so nothing counted
 * before the first scrape is lost.
 */
import type { RunEvent, RunResult } from "../../engines/types.js";
import type { PromMetrics } from "./prometheus.js";
import type { Telemetry, TurnTelemetry } from "./types.js";

export interface MetricsOptions {
  /** Sessions open in this process now (read at each scrape). */
  liveSessions(): number;
  /** Monotonic milliseconds, for turn durations. */
  monotonic(): number;
}

/** The counters, by their short names (prometheus.ts gives each its Prometheus name). */
export type CounterName = "turns" | "toolCalls" | "tokens" | "modelCalls" | "cost" | "providerErrors";

/** Where counts go: kept here until the first scrape, then prom-client's metrics. */
export interface MetricsSink {
  count(counter: CounterName, labels: Record<string, string>, by: number): void;
  observeTurn(seconds: number): void;
  sseClients(delta: number): void;
}

/** Token kinds of veil_llm_tokens_total: input counts every prompt token, cached ones included. */
const TOKEN_KINDS = [
  ["input", "prompt_tokens"],
  ["output", "completion_tokens"],
  ["cache_read", "cached_tokens"],
  ["cache_write", "cache_creation_tokens"],
  ["reasoning", "reasoning_tokens"],
] as const;

/** Turn durations kept for the registry before prom-client loads anyway (a server nobody scrapes stays small). */
const MAX_PENDING_TURNS = 10_000;

/** Counts before the registry exists: sums per counter and label set, each turn's duration, the SSE streams open. */
class PendingCounts implements MetricsSink {
  private readonly sums = new Map<string, { counter: CounterName; labels: Record<string, string>; total: number }>();
  readonly turnSeconds: number[] = [];
  private sse = 0;

  count(counter: CounterName, labels: Record<string, string>, by: number): void {
    // A counter's labels always have the same names in the same order, so their values make the key.
    let key: string = counter;
    for (const name in labels) key += `\0${labels[name]}`;
    const sum = this.sums.get(key);
    if (sum) sum.total += by;
    else this.sums.set(key, { counter, labels, total: by });
  }

  observeTurn(seconds: number): void {
    this.turnSeconds.push(seconds);
  }

  sseClients(delta: number): void {
    this.sse += delta;
  }

  replayInto(sink: MetricsSink): void {
    for (const { counter, labels, total } of this.sums.values()) sink.count(counter, labels, total);
    for (const seconds of this.turnSeconds) sink.observeTurn(seconds);
    if (this.sse !== 0) sink.sseClients(this.sse);
  }
}

export class VeilMetrics implements Telemetry {
  private readonly pending = new PendingCounts();
  private sink: MetricsSink = this.pending;
  private prometheus?: Promise<PromMetrics>;

  constructor(private readonly options: MetricsOptions) {}

  turnStarted(): TurnTelemetry {
    const startedAt = this.options.monotonic();
    return {
      prepared: () => undefined,
      event: (event) => this.event(event),
      ended: (result) => this.ended(result, startedAt),
    };
  }

  modelCallFailed(code: string): void {
    this.sink.count("providerErrors", { code }, 1);
  }

  sseOpened(): void {
    this.sink.sseClients(1);
  }

  sseClosed(): void {
    this.sink.sseClients(-1);
  }

  /** True once prom-client is loaded (the first scrape, or many turns before one). */
  get loaded(): boolean {
    return this.sink !== this.pending;
  }

  /** The metrics in Prometheus' text format, and its content type. */
  async scrape(): Promise<{ text: string; contentType: string }> {
    const prometheus = await this.load();
    return { text: await prometheus.text(), contentType: prometheus.contentType };
  }

  async close(): Promise<void> {
    (await this.prometheus)?.close();
  }

  private load(): Promise<PromMetrics> {
    this.prometheus ??= import("./prometheus.js").then(({ PromMetrics }) => {
      const prometheus = new PromMetrics(this.options);
      this.pending.replayInto(prometheus);
      this.sink = prometheus;
      return prometheus;
    });
    return this.prometheus;
  }

  private event(event: RunEvent): void {
    if (event.type === "tool_finished") this.sink.count("toolCalls", { tool: event.result.call.name, status: event.result.state }, 1);
    else if (event.type === "model_usage") {
      this.sink.count("modelCalls", {}, 1);
      for (const [kind, field] of TOKEN_KINDS) if (event.usage[field] > 0) this.sink.count("tokens", { kind }, event.usage[field]);
    }
  }

  private ended(result: RunResult, startedAt: number): void {
    this.sink.count("turns", { stop_reason: result.stopReason }, 1);
    this.sink.observeTurn(Math.max(0, this.options.monotonic() - startedAt) / 1000);
    if (result.costUsd) this.sink.count("cost", {}, result.costUsd);
    if (!this.loaded && this.pending.turnSeconds.length >= MAX_PENDING_TURNS) void this.load().catch(() => undefined);
  }
}

import type { Logger } from "../../base/log.js";
import type { TelemetrySettings } from "../../config/types.js";
import type { MetricsOptions, VeilMetrics } from "./metrics.js";
import type { TracesConfig } from "./tracing.js";
import { combineTelemetry, type Telemetry } from "./types.js";

export interface LoadedTelemetry {
  /** What sees the runs: metrics, traces, both, or null. */
  telemetry: Telemetry | null;
  /** The Prometheus registry behind GET /metrics (null when metrics are off). */
  metrics: VeilMetrics | null;
}

/**
 * Loads only what is configured: a serving runtime's metrics (which load prom-client at
 * their first scrape), the OpenTelemetry SDK when traces have an endpoint.
 */
export async function loadTelemetry(options: {
  env: Record<string, string | undefined>;
  settings: TelemetrySettings | undefined;
  metrics: MetricsOptions | null;
  log: Logger;
}): Promise<LoadedTelemetry> {
  const parts: Telemetry[] = [];
  let metrics: VeilMetrics | null = null;
  if (options.metrics) {
    const { VeilMetrics } = await import("./metrics.js");
    metrics = new VeilMetrics(options.metrics);
    parts.push(metrics);
  }
  const traces = tracesConfig(options.env, options.settings);
  if (traces) {
    const { createTracing } = await import("./tracing.js");
    parts.push(await createTracing(traces, options.log));
    options.log.info("telemetry: traces go to the collector", { url: traces.url, protocol: traces.protocol });
  }
  return { telemetry: combineTelemetry(parts), metrics };
}

/**
 * Where traces go, from the standard OTEL_* variables over settings.telemetry; null when no
 * endpoint is set. The variables' meanings are OpenTelemetry's: a base URL gets /v1/traces,
 * the traces-only URL is used as it is.
 */
export function tracesConfig(env: Record<string, string | undefined>, settings: TelemetrySettings | undefined): TracesConfig | null {
  const exact = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT || settings?.otlpEndpoint;
  const url = exact || (base ? `${base.replace(/\/+$/, "")}/v1/traces` : "");
  if (!url) return null;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || settings?.protocol || "http/protobuf";
  const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY);
  const timeout = Number(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT || env.OTEL_EXPORTER_OTLP_TIMEOUT);
  return {
    url,
    protocol: protocol === "http/json" ? "http/json" : "http/protobuf",
    headers: { ...settings?.headers, ...parseHeaders(env.OTEL_EXPORTER_OTLP_HEADERS), ...parseHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) },
    serviceName: env.OTEL_SERVICE_NAME || settings?.serviceName || "veil",
    scheduledDelayMs: env.OTEL_BSP_SCHEDULE_DELAY && Number.isFinite(delay) && delay >= 0 ? delay : 1_000,
    exportTimeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout : 10_000,
  };
}

/** `k1=v1,k2=v2` (values URL-encoded), as OTEL_EXPORTER_OTLP_HEADERS holds them. */
function parseHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    try {
      headers[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      headers[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
    }
  }
  return headers;
}

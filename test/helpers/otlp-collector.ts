/**
 * A loopback OTLP/HTTP trace collector: a real HTTP server on 127.0.0.1 that takes
 * `POST /v1/traces` (http/json decoded into spans; http/protobuf kept as raw bytes) and
 * answers 200 `{}` (or `status` when set).
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

export interface CollectedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  kind: number;
  attributes: Record<string, unknown>;
  status: { code: number; message?: string };
  resource: Record<string, unknown>;
}

export interface OtlpCollector {
  /** Base URL (OTEL_EXPORTER_OTLP_ENDPOINT). */
  url: string;
  spans: CollectedSpan[];
  /** Raw bodies and content types of every export. */
  exports: { contentType: string; body: Buffer }[];
  /** Resolves once `predicate` holds for the spans received (checked on each export). */
  waitFor(predicate: (spans: CollectedSpan[]) => boolean): Promise<CollectedSpan[]>;
  close(): Promise<void>;
}

export async function startOtlpCollector(): Promise<OtlpCollector> {
  const spans: CollectedSpan[] = [];
  const exports: OtlpCollector["exports"] = [];
  const waiters: { predicate: (spans: CollectedSpan[]) => boolean; resolve: (spans: CollectedSpan[]) => void }[] = [];
  const check = () => {
    for (const waiter of [...waiters]) {
      if (!waiter.predicate(spans)) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(spans);
    }
  };
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    const contentType = String(req.headers["content-type"] ?? "");
    exports.push({ contentType, body });
    if (req.url === "/v1/traces" && contentType.includes("json")) spans.push(...decodeJson(JSON.parse(body.toString("utf8"))));
    res.writeHead(200, { "content-type": contentType.includes("json") ? "application/json" : "application/x-protobuf" });
    res.end(contentType.includes("json") ? "{}" : "");
    check();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    exports,
    waitFor: (predicate) =>
      new Promise((resolve) => {
        waiters.push({ predicate, resolve });
        check();
      }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** OTLP JSON (ExportTraceServiceRequest) → flat spans with plain attribute values. */
function decodeJson(request: any): CollectedSpan[] {
  const out: CollectedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = attributes(resourceSpans.resource?.attributes);
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        out.push({
          name: span.name,
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? "",
          kind: span.kind,
          attributes: attributes(span.attributes),
          status: span.status ?? { code: 0 },
          resource,
        });
      }
    }
  }
  return out;
}

function attributes(list: any[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, plain(a.value)]));
}

function plain(value: any): unknown {
  if (value == null) return null;
  if ("stringValue" in value) return value.stringValue;
  if ("intValue" in value) return Number(value.intValue);
  if ("doubleValue" in value) return Number(value.doubleValue);
  if ("boolValue" in value) return value.boolValue;
  if ("arrayValue" in value) return (value.arrayValue.values ?? []).map(plain);
  return value;
}

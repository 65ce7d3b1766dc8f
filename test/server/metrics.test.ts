import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { httpError, reply, startFakeLlm } from "../helpers/fake-llm.js";
import { built, spawnServer } from "../helpers/spawned-server.js";
import { tmpWorkspace } from "../helpers/workspace.js";
import { VeilClient } from "../../src/client/index.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Prometheus' text exposition format: `# TYPE name kind` lines and `name{label="v",…} value` samples. */
function parseExposition(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("# TYPE ")) {
      const [, , name, kind] = line.split(" ");
      types.set(name!, kind!);
      continue;
    }
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return { types, samples };
}

function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

describe("GET /metrics", () => {
  it("is Prometheus text behind the bearer secret, counting turns, tool calls, tokens, durations, live sessions, SSE clients and provider errors", async () => {
    h = await createRuntimeHarness({ files: { "a.md": "# a\n" } });
    const server = await h.serve();
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);

    const session = (await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json()) as { id: string };
    const stream = await server.fetch(`/sessions/${session.id}/events`);
    const reader = stream.body!.getReader();
    await reader.read();

    h.llm.enqueue(reply().tool("glob", { pattern: "*.md" }).tool("read_file", { file: "missing.txt" }).usage({ prompt_tokens: 100, completion_tokens: 20, cached_tokens: 60 }).stop());
    h.llm.enqueue(reply().text("done").usage({ prompt_tokens: 150, completion_tokens: 5 }).stop());
    const chat = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "look" }) });
    expect(chat.status).toBe(200);
    // Two 500s: the call and its one retry (settings.retry.maxRetries is 1 in the harness).
    h.llm.enqueue(httpError(500), httpError(500));
    const failed = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "again" }) });
    expect(failed.status).toBe(502);

    const scrape = await server.fetch("/metrics");
    expect(scrape.status).toBe(200);
    expect(scrape.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const { types, samples } = parseExposition(await scrape.text());
    // The typed client reads the same text.
    const client = new VeilClient({ baseUrl: server.url, secret: "test-secret" });
    expect(parseExposition(await client.metrics()).samples.find((s) => s.name === "veil_turns_total" && s.labels.stop_reason === "stop")?.value).toBe(1);
    expect(types.get("veil_turns_total")).toBe("counter");
    expect(types.get("veil_turn_duration_seconds")).toBe("histogram");
    expect(types.get("veil_sessions_live")).toBe("gauge");
    expect(value(samples, "veil_turns_total", { stop_reason: "stop" })).toBe(1);
    expect(value(samples, "veil_turns_total", { stop_reason: "error" })).toBe(1);
    expect(value(samples, "veil_tool_calls_total", { tool: "glob", status: "done" })).toBe(1);
    expect(value(samples, "veil_tool_calls_total", { tool: "read_file", status: "error" })).toBe(1);
    expect(value(samples, "veil_llm_tokens_total", { kind: "input" })).toBe(250);
    expect(value(samples, "veil_llm_tokens_total", { kind: "output" })).toBe(25);
    expect(value(samples, "veil_llm_tokens_total", { kind: "cache_read" })).toBe(60);
    expect(value(samples, "veil_turn_duration_seconds_count")).toBe(2);
    expect(value(samples, "veil_turn_duration_seconds_bucket", { le: "+Inf" })).toBe(2);
    expect(value(samples, "veil_sessions_live")).toBe(1);
    expect(value(samples, "veil_sse_clients")).toBe(1);
    const providerErrors = samples.filter((s) => s.name === "veil_provider_errors_total");
    expect(providerErrors).toEqual([{ name: "veil_provider_errors_total", labels: { code: "PROVIDER_ERROR" }, value: 1 }]);

    await reader.cancel();
    await server.fetch(`/sessions/${session.id}`, { method: "DELETE" });
    const after = parseExposition(await (await server.fetch("/metrics")).text()).samples;
    expect(value(after, "veil_sse_clients")).toBe(0);
    expect(value(after, "veil_sessions_live")).toBe(0);
  });

  it("is not kept by a one-shot runtime, which loads no prom-client", async () => {
    h = await createRuntimeHarness({ mode: "oneshot" });
    expect(h.runtime.metrics).toBeNull();
    expect(h.runtime.telemetry).toBeNull();
  });

  it("loads prom-client at the first scrape, which still counts what came before it", async () => {
    h = await createRuntimeHarness({ files: { "a.md": "# a\n" } });
    const server = await h.serve();
    const session = (await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json()) as { id: string };
    h.llm.enqueue(reply().tool("glob", { pattern: "*.md" }).usage({ prompt_tokens: 40, completion_tokens: 4 }).stop());
    h.llm.enqueue(reply().text("done").usage({ prompt_tokens: 50, completion_tokens: 2 }).stop());
    expect((await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "look" }) })).status).toBe(200);
    expect(h.runtime.metrics!.loaded).toBe(false);

    const first = parseExposition(await (await server.fetch("/metrics")).text()).samples;
    expect(h.runtime.metrics!.loaded).toBe(true);
    expect(value(first, "veil_turns_total", { stop_reason: "stop" })).toBe(1);
    expect(value(first, "veil_tool_calls_total", { tool: "glob", status: "done" })).toBe(1);
    expect(value(first, "veil_llm_calls_total")).toBe(2);
    expect(value(first, "veil_llm_tokens_total", { kind: "input" })).toBe(90);
    expect(value(first, "veil_turn_duration_seconds_count")).toBe(1);

    // After the first scrape, counts go straight to the registry, on top of the earlier ones.
    h.llm.enqueue(reply().text("again").usage({ prompt_tokens: 10, completion_tokens: 1 }).stop());
    expect((await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "more" }) })).status).toBe(200);
    const second = parseExposition(await (await server.fetch("/metrics")).text()).samples;
    expect(value(second, "veil_turns_total", { stop_reason: "stop" })).toBe(2);
    expect(value(second, "veil_llm_tokens_total", { kind: "input" })).toBe(100);
    expect(value(second, "veil_turn_duration_seconds_count")).toBe(2);
  });

  it.skipIf(!built)("veil serve runs a turn without loading prom-client (nor @opentelemetry) until /metrics is scraped", async () => {
    const ws = tmpWorkspace();
    const llm = await startFakeLlm();
    const hook = ws.path("loaded-hook.cjs");
    const list = ws.path("loaded.txt");
    // On SIGUSR2 the server writes the files it has loaded.
    writeFileSync(hook, `process.on("SIGUSR2", () => require("node:fs").writeFileSync(${JSON.stringify(list)}, Object.keys(require.cache).join("\\n")));\n`);
    const loaded = async (): Promise<string[]> => {
      rmSync(list, { force: true });
      server.child.kill("SIGUSR2");
      await expect.poll(() => existsSync(list)).toBe(true);
      return readFileSync(list, "utf8").split("\n");
    };
    const telemetryFiles = (files: string[]) => files.filter((file) => /node_modules\/(@opentelemetry|prom-client)\//.test(file));
    const server = await spawnServer(ws.root, { baseUrl: llm.baseUrl, env: { NODE_OPTIONS: `--require ${hook}` } });
    try {
      const session = (await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json()) as { id: string };
      llm.enqueue(reply().tool("glob", { pattern: "*" }).stop());
      llm.enqueue(reply().text("done").stop());
      expect((await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "look" }) })).status).toBe(200);
      const before = await loaded();
      // The hook saw the server's packages, so an empty list below means something.
      expect(before.some((file) => file.includes("node_modules/better-sqlite3/"))).toBe(true);
      expect(telemetryFiles(before)).toEqual([]);

      const samples = parseExposition(await (await server.fetch("/metrics")).text()).samples;
      expect(value(samples, "veil_turns_total", { stop_reason: "stop" })).toBe(1);
      expect(value(samples, "veil_tool_calls_total", { tool: "glob", status: "done" })).toBe(1);
      expect(telemetryFiles(await loaded()).some((file) => file.includes("node_modules/prom-client/"))).toBe(true);
    } finally {
      await server.kill();
      await llm.close();
      ws.cleanup();
    }
  });
});

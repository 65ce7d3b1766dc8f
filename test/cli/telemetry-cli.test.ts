import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { startOtlpCollector, type OtlpCollector } from "../helpers/otlp-collector.js";
import { present } from "../helpers/requirements.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const MAIN = join(process.cwd(), "dist/src/main.js");
let ws: TempWorkspace;
let llm: FakeLlm;
let collector: OtlpCollector | undefined;

beforeEach(async () => {
  ws = tmpWorkspace();
  llm = await startFakeLlm();
});
afterEach(async () => {
  await llm.close();
  await collector?.close();
  collector = undefined;
  ws.cleanup();
});

/**
 * `veil run PROMPT` with a preloaded script that writes, at exit, every file the process
 * loaded through require (the CLI is one CommonJS bundle: its packages are required).
 */
function veilRun(args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string; loaded: string[] }> {
  const hook = join(ws.root, "loaded-hook.cjs");
  const list = join(ws.root, "loaded.txt");
  writeFileSync(hook, `process.on("exit", () => require("node:fs").writeFileSync(${JSON.stringify(list)}, Object.keys(require.cache).join("\\n")));\n`);
  const env = { ...process.env, VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk-test", VEIL_MODEL: "fake-model", VEIL_HOME: join(ws.root, ".home"), NODE_OPTIONS: `--require ${hook}`, ...extraEnv };
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, "run", "--workspace", ws.root, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += String(d)));
    child.stderr.on("data", (d) => (stderr += String(d)));
    child.on("exit", (code) => resolve({ code, stdout, stderr, loaded: existsSync(list) ? readFileSync(list, "utf8").split("\n") : [] }));
  });
}

const telemetryFiles = (loaded: string[]) => loaded.filter((file) => /node_modules\/(@opentelemetry|prom-client)\//.test(file));

describe.skipIf(!present(`the build (${MAIN})`, existsSync(MAIN)))("telemetry in veil run", () => {
  it("loads no telemetry package when none is configured", async () => {
    llm.enqueue(reply().tool("glob", { pattern: "*" }).stop());
    llm.enqueue(reply().text("plain").stop());
    const run = await veilRun(["hello"], { OTEL_EXPORTER_OTLP_ENDPOINT: "" });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe("plain\n");
    // The hook did see the process's packages (so an empty list below means something).
    expect(run.loaded.some((file) => file.includes("node_modules/better-sqlite3/"))).toBe(true);
    expect(telemetryFiles(run.loaded)).toEqual([]);
  });

  it("with OTEL_EXPORTER_OTLP_ENDPOINT, sends the turn's spans before it exits", async () => {
    collector = await startOtlpCollector();
    llm.enqueue(reply().tool("glob", { pattern: "*" }).stop());
    llm.enqueue(reply().text("traced").stop());
    const run = await veilRun(["hello"], { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe("traced\n");
    expect(telemetryFiles(run.loaded).some((file) => file.includes("@opentelemetry/sdk-trace"))).toBe(true);
    // veil run is one-shot: no metrics registry.
    expect(telemetryFiles(run.loaded).some((file) => file.includes("prom-client"))).toBe(false);
    expect(collector.spans.map((s) => s.name).sort()).toEqual(["chat fake-model", "chat fake-model", "execute_tool glob", "invoke_agent default"]);
  });
});

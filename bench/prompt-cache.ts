import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRuntime } from "../src/runtime.js";
import { memoryLogger } from "../src/base/log.js";
import { startFakeLlm, reply, type FakeRequest } from "../test/helpers/fake-llm.js";
import type { BenchResult } from "./types.js";

/** What a chat template renders first: the system message, then the tools. */
function cacheablePrefix(request: FakeRequest): string {
  const body = request.body as { messages: { role: string; content: unknown }[]; tools?: unknown };
  const system = body.messages.find((m) => m.role === "system");
  return JSON.stringify(system?.content ?? "") + JSON.stringify(body.tools ?? []);
}

function sharedPrefixLength(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** True when `later`'s messages start with every message of `earlier` (the provider cache keeps hitting). */
function extendsPrevious(earlier: FakeRequest, later: FakeRequest): boolean {
  const before = (earlier.body as { messages: unknown[] }).messages;
  const after = (later.body as { messages: unknown[] }).messages;
  return before.every((m, i) => JSON.stringify(m) === JSON.stringify(after[i]));
}

/**
 * Two new sessions of one agent (and two spawn-like sessions with different objectives):
 * how much of "system message + tools" of their first requests is byte-identical.
 */
export async function run(): Promise<BenchResult[]> {
  const workspace = mkdtempSync(join(tmpdir(), "veil-bench-prompt-"));
  const llm = await startFakeLlm();
  llm.respond(() => reply().text("ok").stop());
  const runtime = await createRuntime({
    workspace,
    env: { VEIL_HOME: join(workspace, "home"), VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk-bench", VEIL_MODEL: "fake-model" },
    log: memoryLogger(),
  });
  try {
    const firstRequest = async (input: { objective?: string }) => {
      const session = await runtime.sessions.create({ agent: "default", ...input });
      await (await runtime.sessions.send(session.id, "hello")).result;
      return { id: session.id, request: llm.completionRequests.at(-1)! };
    };
    const a = await firstRequest({});
    const b = await firstRequest({});
    await (await runtime.sessions.send(a.id, "again")).result;
    const aSecond = llm.completionRequests.at(-1)!;
    const c = await firstRequest({ objective: "Count the files in src." });
    const d = await firstRequest({ objective: "Summarise the README." });
    const fraction = (x: FakeRequest, y: FakeRequest) => {
      const [px, py] = [cacheablePrefix(x), cacheablePrefix(y)];
      return { value: sharedPrefixLength(px, py) / Math.max(px.length, py.length), length: px.length };
    };
    const plain = fraction(a.request, b.request);
    const spawned = fraction(c.request, d.request);
    return [
      {
        name: "shared prefix of system message + tools, two new sessions of one agent",
        value: plain.value * 100,
        unit: "%",
        target: "≥ 95 %",
        note: `${plain.length} chars; second turn extends the first request: ${extendsPrevious(a.request, aSecond)}`,
      },
      {
        name: "same, two sessions of one agent with different objectives (spawn)",
        value: spawned.value * 100,
        unit: "%",
        note: `${spawned.length} chars`,
      },
    ];
  } finally {
    await runtime.close();
    await llm.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}

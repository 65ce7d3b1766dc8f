import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
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

function systemPrompt(request: FakeRequest): string {
  const body = request.body as { messages: { role: string; content: unknown }[] };
  return JSON.stringify(body.messages.find((m) => m.role === "system")?.content ?? "");
}

/** A project with instructions at both levels, a nested AGENTS.md and skills in every folder kind. */
const INSTRUCTED_PROJECT: Record<string, string> = {
  "AGENTS.md": "# Project rules\n- Run `npm test` before you finish.\n- Keep functions under 80 lines.\n",
  "home/AGENTS.md": "Answer in plain English; no emoji.\n",
  "src/AGENTS.md": "Files here are ESM TypeScript.\n",
  ".veil/skills/release/SKILL.md": "---\nname: release\ndescription: Cut a release: bump the version, write the changelog, tag.\n---\nSteps.\n",
  ".veil/skills/release/checklist.md": "- tests green\n",
  ".claude/skills/review/SKILL.md": "---\nname: review\ndescription: Review a change for bugs and style before it is merged.\n---\nSteps.\n",
  "home/skills/notes/SKILL.md": "---\nname: notes\ndescription: Keep meeting notes in docs/notes/ with a dated file name.\n---\nSteps.\n",
};

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
 * how much of "system message + tools" of their first requests is byte-identical; then the
 * same for a project with AGENTS.md files and skills.
 */
export async function run(): Promise<BenchResult[]> {
  const plain = await measure({});
  const instructed = await measure(INSTRUCTED_PROJECT);
  return [
    {
      name: "shared prefix of system message + tools, two new sessions of one agent",
      value: plain.sessions.value * 100,
      unit: "%",
      target: "≥ 95 %",
      note: `${plain.sessions.length} chars; second turn extends the first request: ${plain.extends}`,
    },
    {
      name: "same, two sessions of one agent with different objectives (spawn)",
      value: plain.spawned.value * 100,
      unit: "%",
      note: `${plain.spawned.length} chars`,
    },
    {
      name: "system prompt shared by two new sessions, with AGENTS.md (root + $VEIL_HOME) and 3 skills",
      value: instructed.system.value * 100,
      unit: "%",
      target: "100 %",
      note: `${instructed.system.length} chars; system message + tools ${round(instructed.sessions.value * 100)} % of ${instructed.sessions.length}`,
    },
  ];
}

async function measure(files: Record<string, string>) {
  const workspace = mkdtempSync(join(tmpdir(), "veil-bench-prompt-"));
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(workspace, rel)), { recursive: true });
    writeFileSync(join(workspace, rel), text);
  }
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
    return {
      sessions: fraction(cacheablePrefix(a.request), cacheablePrefix(b.request)),
      system: fraction(systemPrompt(a.request), systemPrompt(b.request)),
      spawned: fraction(cacheablePrefix(c.request), cacheablePrefix(d.request)),
      extends: extendsPrevious(a.request, aSecond),
    };
  } finally {
    await runtime.close();
    await llm.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}

function fraction(x: string, y: string): { value: number; length: number } {
  return { value: sharedPrefixLength(x, y) / Math.max(x.length, y.length), length: x.length };
}

function round(n: number): string {
  return n.toFixed(n >= 99.95 ? 0 : 1);
}

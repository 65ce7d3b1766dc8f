import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reply, startFakeLlm, type FakeLlm, type FakeRequest } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

/** The prompt the side-by-side benchmark (peers.sh) gives every runtime. */
const BENCH_PROMPT = "Look around this project: read some files, run a shell command and grep for the word needle, then reply with done.";
const MAX_FIRST_REQUEST_BYTES = 12 * 1024;

interface WireTool {
  type: "function";
  function: { name: string; description: string; parameters: Schema };
}
interface Schema {
  type?: string | string[];
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  maximum?: number;
}

/**
 * What the tools' reference manual puts in a description, tool by tool: its "Tool Summary"
 * table (one description per tool), the prose under the tool's heading, and the Description
 * cell of each row of the tool's parameter table. Derived by hand from those, keeping every
 * statement a model needs to call the tool right: each default, limit and unit; each
 * condition ("ignored when", "honored only on", "required when"); each value set (as the
 * schema's enum); what is required (the table's ✓ column, as the schema's `required`); and
 * the sentences the manual sets in bold as rules, word for word. Left out: cross-references,
 * history ("removed in May 2026"), and what a field's name already says ("Content to write").
 *
 * `says` are phrases that must appear (case-insensitive) in the description the model gets:
 * the tool's, or the parameter's. `required` lists the ✓ parameters; every parameter in the
 * manual's table must exist. `enum` and `maximum` are checked on the schema the model gets.
 */
type ParamRule = { says?: string[]; enum?: string[]; maximum?: number };
type ToolRule = { says: string[]; required: string[]; params: Record<string, ParamRule> };

const MANUAL: Record<string, ToolRule> = {
  bash: {
    says: ["execute a shell command", "persistent", "exit code: N", "30000 chars", "interactive prompts are not supported", "run_in_background"],
    required: ["command"],
    params: {
      command: {},
      timeout: { says: ["default 120", "ignored when run_in_background"], maximum: 600 },
      run_in_background: { says: ["background", "shell_id"] },
      workingDir: { says: ["initial working directory", "honored only on the FIRST bash call in a session"] },
    },
  },
  bash_output: { says: ["background shell", "new output since the last", "non-blocking", "status", "exit code"], required: ["shell_id"], params: { shell_id: {} } },
  kill_shell: { says: ["terminate", "background shell", "SIGTERM", "SIGKILL after 2"], required: ["shell_id"], params: { shell_id: {} } },
  read_file: {
    says: ["2000 lines", "offset/limit", "images", "audio", "write_file/edit_file"],
    required: ["file"],
    params: { file: { says: ["absolute path"] }, offset: { says: ["1-indexed", "text files only"] }, limit: { says: ["number of lines", "text files only"] } },
  },
  write_file: {
    says: ["create or overwrite", "parent dirs", "must have been read with read_file", "changed on disk", "atomic"],
    required: ["file", "content"],
    params: { file: { says: ["absolute path"] }, content: {} },
  },
  edit_file: {
    says: ["old_string", "EXACTLY", "space, tab and newline", "must have been read with read_file"],
    required: ["file", "old_string", "new_string"],
    params: { file: { says: ["absolute path"] }, old_string: { says: ["exact text", "unique unless replace_all"] }, new_string: {}, replace_all: {} },
  },
  list_dir: { says: ["list a directory", "sizes and types"], required: ["dir"], params: { dir: {}, recursive: {} } },
  glob: {
    says: ["find files", "glob pattern"],
    required: ["pattern"],
    params: { pattern: { says: ["**/*.js", "src/*.ts"] }, cwd: { says: ["base directory", "default: workspace root"] }, limit: { says: ["max results", "default: 50"] } },
  },
  grep: {
    says: ["search file contents", "regex", "path:line:text"],
    required: ["pattern", "path"],
    params: {
      pattern: { says: ["regex or literal"] },
      path: { says: ["file or directory"] },
      recursive: {},
      case_sensitive: { says: ["case-sensitive", "default: false"] },
      fixed_strings: { says: ["literal"] },
      include: { says: ["glob to filter files", "*.js"] },
      context_lines: { says: ["context", "around each match"] },
    },
  },
  web_search: { says: ["DuckDuckGo", "titles", "URLs", "snippets"], required: ["query"], params: { query: {}, numResults: { says: ["default 5", "max 10"] } } },
  web_fetch: {
    says: ["fetch a URL"],
    required: ["url"],
    params: {
      url: {},
      mode: { enum: ["text", "json", "base64"], says: ['"text" (default', "HTML tags stripped", "parsed + pretty-printed"] },
      page: { says: ["1-indexed", "50000 chars per page", "text mode"] },
    },
  },
  memory_read: { says: ["read", "memory", "empty"], required: [], params: { scope: { enum: ["agent", "global"], says: ['"agent" (default)'] } } },
  memory_write: {
    says: ["append", "memory", "timestamped", "empty content", "exact repeat of the last entry"],
    required: ["content"],
    params: { content: {}, scope: { enum: ["agent", "global"], says: ['"agent" (default)'] } },
  },
  memory_search: {
    says: ["search memory"],
    required: ["query"],
    params: { query: {}, scope: { enum: ["agent", "global"], says: ['"agent" (default)'] }, maxResults: { says: ["default 5"] } },
  },
  todo_write: { says: ["todo list", "current task"], required: ["todos"], params: { todos: {} } },
  todo_read: { says: ["current todo list"], required: [], params: {} },
  agent_spawn: {
    says: ["subagent", "sessionId"],
    required: ["agent", "instance_name", "objective"],
    params: {
      agent: {},
      instance_name: { says: ["unique label", "under the caller"] },
      objective: { says: ["what this subagent should accomplish", "injected into its system prompt under ## Objective"] },
      success_criteria: { says: ["completion guideline", "injected under ## Success Criteria"] },
      overrides: { says: ["per-spawn LLM config", "reasoning"] },
      initial_message: { says: ["if absent, no LLM turn fires", "async_inform: true"] },
    },
  },
  agent_message: {
    says: ["send a message", "subagent session", "sync by default", "async_inform: true", "fire-and-forget"],
    required: ["sessionId", "message"],
    params: {
      sessionId: { says: ["from agent_spawn"] },
      message: {},
      async_inform: {
        says: [
          "end your turn after the notice",
          "new user message",
          "A SECOND async_inform to a target with an in-flight dispatch returns the FIRST mid-run text response, NOT the final response.",
        ],
      },
      timeout: { says: ["sync-mode timeout in seconds", "default 600"] },
      full_steps: { says: ["per-line log", "assistant text + tool calls", "follow-up async"] },
    },
  },
  agent_control: {
    says: ["inspect", "get-state", "get-summary", "get-last-message", "update", "reasoning", "budget", "stop a subagent"],
    required: ["sessionId", "action"],
    params: {
      sessionId: {},
      action: { enum: ["get-state", "get-summary", "stop", "update-session", "get-last-message"], says: ["get-summary is a paid LLM call"] },
      params: { says: ["update-session", "reasoning (next turn)", "budget_override (at once", "get-last-message: full_steps"] },
    },
  },
  log_write: { says: ["progress log entry", "echoed back"], required: ["message"], params: { message: {}, level: { enum: ["info", "warn", "error"], says: ['"info" (default)'] }, metadata: {} } },
  sleep: { says: ["wait", "seconds", "counts against the time limit, not iterations"], required: ["seconds"], params: { seconds: { maximum: 300 } } },
  schedule_wakeup: {
    says: ["self wake-up", "new user turn", "one schedule per session", "replaces"],
    required: ["time"],
    params: {
      time: { says: ['"30m", "90s", "2h", or a bare number (= minutes)', '"0" disables and removes any existing schedule'] },
      message: { says: ["new user turn", "required when time > 0"] },
      loop: { says: ["re-arm and fire every time until cancelled"] },
    },
  },
  tool_search: { says: ["search", "name or description", "full schemas", "read-only", "does not make any tool callable"], required: ["query"], params: { query: {} } },
  tool_activate: { says: ["make a custom tool callable", "load into active tool list", "next call"], required: ["name"], params: { name: { says: ["exact tool name", "tool_search"] } } },
};

/** Nested fields the manual describes in prose: they must reach the model too. */
const NESTED: Record<string, { path: string[]; required?: string[]; enum?: Record<string, string[]> }[]> = {
  todo_write: [{ path: ["todos", "items"], required: ["id", "content", "status", "priority"], enum: { status: ["pending", "in_progress", "completed"], priority: ["high", "medium", "low"] } }],
  agent_spawn: [
    { path: ["overrides", "reasoning"], required: ["effort"] },
    { path: ["initial_message"], required: ["message"] },
  ],
  agent_control: [{ path: ["params", "budget_override"] }, { path: ["params", "reasoning"], required: ["effort"] }],
};

function schemaAt(root: Schema, path: string[]): Schema | undefined {
  let node: Schema | undefined = root;
  for (const key of path) node = key === "items" ? node?.items : node?.properties?.[key];
  return node;
}

describe("the first request a session sends", () => {
  let h: RuntimeHarness;
  let llm: FakeLlm;
  let first: FakeRequest;
  let tools: WireTool[];

  beforeAll(async () => {
    llm = await startFakeLlm({ keepRawBodies: true });
    h = await createRuntimeHarness({ llm });
    llm.respond(() => reply().text("done").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, BENCH_PROMPT)).result;
    first = llm.completionRequests[0]!;
    tools = first.body.tools as WireTool[];
  });
  afterAll(async () => {
    await h?.close();
    await llm?.close();
  });

  it(`offers all 24 built-in tools in at most ${MAX_FIRST_REQUEST_BYTES} bytes (system prompt + tools + the prompt)`, () => {
    expect(tools.map((t) => t.function.name).sort()).toEqual(Object.keys(MANUAL).sort());
    const bytes = Buffer.byteLength(first.rawBody!, "utf8");
    console.log(`[first-request.test] first request: ${bytes} bytes, of which tools ${Buffer.byteLength(JSON.stringify(tools))}`);
    expect(bytes).toBeLessThanOrEqual(MAX_FIRST_REQUEST_BYTES);
  });

  it("keeps every rule the manual puts in a tool's or a parameter's description", () => {
    const missing: string[] = [];
    for (const tool of tools) {
      const { name, description, parameters } = tool.function;
      const rule = MANUAL[name]!;
      for (const phrase of rule.says) if (!description.toLowerCase().includes(phrase.toLowerCase())) missing.push(`${name}: "${phrase}"`);
      expect([...(parameters.required ?? [])].sort(), `${name}: required parameters`).toEqual([...rule.required].sort());
      for (const [param, paramRule] of Object.entries(rule.params)) {
        const schema = parameters.properties?.[param];
        if (!schema) {
          missing.push(`${name}.${param}: no such parameter`);
          continue;
        }
        const said = (schema.description ?? "").toLowerCase();
        for (const phrase of paramRule.says ?? []) if (!said.includes(phrase.toLowerCase())) missing.push(`${name}.${param}: "${phrase}"`);
        if (paramRule.enum) expect(schema.enum, `${name}.${param}: enum`).toEqual(paramRule.enum);
        if (paramRule.maximum !== undefined) expect(schema.maximum, `${name}.${param}: maximum`).toBe(paramRule.maximum);
      }
      for (const nested of NESTED[name] ?? []) {
        const schema = schemaAt(parameters, nested.path);
        expect(schema?.type, `${name}.${nested.path.join(".")}`).toBe("object");
        if (nested.required) expect(schema?.required, `${name}.${nested.path.join(".")}: required`).toEqual(nested.required);
        for (const [field, values] of Object.entries(nested.enum ?? {})) expect(schema?.properties?.[field]?.enum, `${name}.${nested.path.join(".")}.${field}`).toEqual(values);
      }
    }
    expect(missing).toEqual([]);
  });

  it("shows the model the short schema while calls are still checked against the full one", async () => {
    const bash = tools.find((t) => t.function.name === "bash")!.function.parameters;
    expect(JSON.stringify(bash)).not.toContain("additionalProperties");
    h.llm.enqueue(reply().tool("bash", { command: "", unknown_field: 1 }).stop());
    h.llm.enqueue(reply().text("ok").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "go")).result;
    const toolMessage = (llm.completionRequests.at(-1)!.body.messages as { role: string; content: string }[]).find((m) => m.role === "tool")!;
    expect(toolMessage.content).toMatch(/VALIDATION_ERROR|must/i);
  });
});

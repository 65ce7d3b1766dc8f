import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { Ajv } from "ajv";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";
import { spawnVeil, VEIL_MAIN, veilBuilt, type Spawned, type SpawnVeilOptions } from "../helpers/cli.js";
import { present } from "../helpers/requirements.js";

const PACKAGE = JSON.parse(readFileSync(fileURLToPath(new URL("../../package.json", import.meta.url)), "utf8")) as { version: string };
const built = veilBuilt;
const hasScript = present("/usr/bin/script (util-linux)", existsSync("/usr/bin/script"));

let llm: FakeLlm;
let ws: TempWorkspace;
let env: Record<string, string>;

beforeEach(async () => {
  llm = await startFakeLlm();
  ws = tmpWorkspace();
  mkdirSync(join(ws.root, "home"), { recursive: true });
  env = { ...(process.env as Record<string, string>), VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk", VEIL_MODEL: "fake-model", VEIL_HOME: join(ws.root, "home") };
  for (const key of ["VEIL_SECRET", "NO_COLOR", "FORCE_COLOR", "VEIL_LOG_LEVEL"]) delete env[key];
});
afterEach(async () => {
  await llm.close();
  ws.cleanup();
});

function veil(args: string[], options: Omit<SpawnVeilOptions, "cwd" | "env"> & { env?: Record<string, string | undefined> } = {}): Promise<Spawned> {
  return spawnVeil(args, { ...options, cwd: ws.root, env: { ...env, ...options.env } });
}

/** Runs veil under a pseudo-terminal (util-linux `script`), so stdout and stderr are TTYs; the output is both, merged. */
function veilOnTty(args: string[], extraEnv: Record<string, string> = {}): Promise<Spawned> {
  const quoted = [process.execPath, VEIL_MAIN, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  return new Promise((resolve, reject) => {
    const child = spawn("script", ["-qec", quoted, "/dev/null"], { cwd: ws.root, env: { ...env, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, stdout, stderr: "" }));
  });
}

function writeSettings(settings: object): void {
  mkdirSync(join(ws.root, ".veil"), { recursive: true });
  writeFileSync(join(ws.root, ".veil/settings.json"), JSON.stringify(settings));
}

/** Spawns `veil serve --port 0`, hands its URL and secret to `body`, then stops it. */
async function withServer(args: string[], body: (url: string, secret: string) => Promise<void>, extraEnv: Record<string, string | undefined> = {}): Promise<Spawned> {
  let failure: unknown;
  let started = false;
  const result = await veil(["serve", "--port", "0", "--secret", "s3cret", ...args], {
    env: extraEnv,
    onStdout: (text, kill) => {
      const match = /listening on (http:\/\/[^\s]+)/.exec(text);
      if (match && !started) {
        started = true;
        body(match[1]!, "s3cret").then(kill, (error) => {
          failure = error;
          kill();
        });
      }
    },
  });
  if (failure) throw failure;
  expect(started).toBe(true);
  return result;
}

const ESC = "\x1b[";

describe.skipIf(!built)("veil CLI: help, version, usage errors", () => {
  it.each(["serve", "run", "agents", "tools", "skills", "sessions", "schedules"])("veil %s --help prints its usage on stdout, exits 0, starts and writes nothing", async (command) => {
    const result = await veil([command, "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^Usage: veil ${command} `));
    expect(result.stdout).toMatch(/--workspace DIR/);
    expect(result.stdout).not.toMatch(/listening on/);
    expect(result.stderr).toBe("");
    expect(readdirSync(ws.root)).toEqual(["home"]);
    expect(readdirSync(join(ws.root, "home"))).toEqual([]);
  });

  it("veil --version prints the package version; veil, veil --help and veil help list every command", async () => {
    expect(await veil(["--version"])).toMatchObject({ code: 0, stdout: `${PACKAGE.version}\n` });
    for (const args of [[], ["--help"], ["help"]]) {
      const result = await veil(args);
      expect(result.code).toBe(0);
      for (const command of ["serve", "run", "agents", "tools", "skills", "sessions", "schedules"]) expect(result.stdout).toContain(`veil ${command} `);
    }
    expect((await veil(["help", "run"])).stdout).toMatch(/^Usage: veil run /);
    expect((await veil(["help", "sessions", "prune"])).stdout).toMatch(/^Usage: veil sessions prune .*--idle DURATION/);
    expect((await veil(["sessions", "close", "--help"])).stdout).toMatch(/^Usage: veil sessions close .*ID\.\.\.$/m);
  });

  it("a usage mistake is one clear first line, then the usage, exit 64", async () => {
    const cases: [string[], string][] = [
      [["bogus"], 'veil: unknown command "bogus"'],
      [["serve", "--prot", "1"], "veil serve: unknown option --prot"],
      [["serve", "--port", "x"], 'veil serve: --port must be an integer from 0 to 65535, got "x"'],
      [["run", "--agent"], "veil run: option --agent needs a value (--agent NAME)"],
      [["run", "--json=yes", "hi"], "veil run: option --json takes no value"],
      [["run", "--session", "s", "--continue", "hi"], "veil run: give --session ID or --continue, not both"],
      [["tools", "extra"], 'veil tools: unexpected argument "extra"'],
      [["sessions", "--log-format", "xml"], 'veil sessions: --log-format must be text or json, got "xml"'],
      [["schedules", "pause", "x"], 'veil schedules: unknown action "pause" (one of list, create, runs, enable, disable, delete)'],
      [["schedules", "create", "hi"], "veil schedules create: give one of --cron EXPR and --every SECONDS"],
      [["schedules", "create", "--every", "60"], 'veil schedules create: give the prompt, e.g. veil schedules create --every 3600 "check the build"'],
      [["schedules", "create", "--every", "soon", "hi"], 'veil schedules create: --every must be a number of seconds, got "soon"'],
      [["schedules", "delete"], "veil schedules delete: give one schedule id"],
      [["schedules", "runs", "sch_1", "--cron", "* * * * *"], "veil schedules runs: --cron is for create"],
    ];
    for (const [args, first] of cases) {
      const result = await veil(args);
      expect(result.code, args.join(" ")).toBe(64);
      const [line, blank, usage] = result.stderr.split("\n");
      expect(line).toBe(first);
      expect(blank).toBe("");
      expect(usage).toMatch(/^(Usage: veil |veil — )/);
      expect(result.stdout).toBe("");
    }
  });
});

describe.skipIf(!built)("veil schedules", () => {
  it("creates, lists, disables and deletes schedules in the workspace's store, and a running server fires one the CLI created", async () => {
    const created = await veil(["schedules", "create", "--every", "1", "--json", "say", "tick"]);
    expect(created.code, created.stderr).toBe(0);
    const schedule = JSON.parse(created.stdout) as { id: string; nextRunAt: string };
    expect(schedule).toMatchObject({ agent: "default", everySeconds: 1, cron: null, prompt: "say tick", enabled: true, session: "new" });
    const listed = await veil(["schedules"]);
    expect(listed.stdout).toMatch(new RegExp(`^${schedule.id}  default\\s+every 1s\\s+next \\S+  "say tick"\n$`));

    llm.respond(() => reply().text("tock").stop());
    await withServer([], async (url, secret) => {
      for (;;) {
        const { runs } = (await (await fetch(`${url}/schedules/${schedule.id}/runs`, { headers: { authorization: `Bearer ${secret}` } })).json()) as { runs: { status: string }[] };
        if (runs.some((r) => r.status === "ok")) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    });
    const runs = await veil(["schedules", "runs", schedule.id]);
    expect(runs.stdout).toMatch(/^\S+Z  ok\s+sess_\S+$/m);
    expect((await veil(["schedules", "disable", schedule.id])).stdout).toMatch(/ disabled  "say tick"\n$/);
    expect(JSON.parse((await veil(["schedules", "enable", schedule.id, "--json"])).stdout)).toMatchObject({ enabled: true });
    const cron = JSON.parse((await veil(["schedules", "create", "--cron", "0 9 * * MON", "--disabled", "--json", "weekly report"])).stdout) as { id: string };
    expect(cron).toMatchObject({ cron: "0 9 * * MON", enabled: false, nextRunAt: null });
    expect((await veil(["schedules", "delete", schedule.id])).stdout).toBe(`deleted ${schedule.id}\n`);
    expect((await veil(["schedules", "list", "--json"])).stdout).toContain(cron.id);
    await veil(["schedules", "delete", cron.id]);
    expect((await veil(["schedules"])).stdout).toBe(`no schedules in ${ws.root}\n`);

    const bad = await veil(["schedules", "create", "--cron", "61 * * * *", "x"]);
    expect([bad.code, bad.stderr.split(":")[0]]).toEqual([1, "VALIDATION_ERROR"]);
    const missing = await veil(["schedules", "runs", "sch_nope"]);
    expect(missing).toMatchObject({ code: 1, stderr: 'SCHEDULE_NOT_FOUND: no schedule "sch_nope"\n' });
  }, 60_000);
});

describe.skipIf(!built)("veil run: prompts, sessions, colours", () => {
  it("reads the prompt from stdin with `-` and from a piped stdin with no argument", async () => {
    llm.enqueue(reply().text("one").stop(), reply().text("two").stop());
    expect(await veil(["run", "-"], { stdin: "prompt from a dash\n" })).toMatchObject({ code: 0, stdout: "one\n" });
    expect(await veil(["run"], { stdin: "piped prompt" })).toMatchObject({ code: 0, stdout: "two\n" });
    const prompts = llm.completionRequests.map((r) => r.body.messages.at(-1));
    expect(prompts).toEqual([
      { role: "user", content: "prompt from a dash" },
      { role: "user", content: "piped prompt" },
    ]);
    const empty = await veil(["run"], { stdin: "  \n" });
    expect(empty.code).toBe(64);
    expect(empty.stderr.split("\n")[0]).toBe('veil run: no prompt (give it as an argument, or pipe it in with "-")');
  });

  it("--continue goes on with the most recently active top-level session; --session ID with the one named", async () => {
    llm.respond((req) => reply().text(`seen ${req.body.messages.filter((m: { role: string }) => m.role === "user").length}`).stop());
    expect((await veil(["run", "first"])).stdout).toBe("seen 1\n");
    expect((await veil(["run", "other"])).stdout).toBe("seen 1\n");
    expect((await veil(["run", "--continue", "second"])).stdout).toBe("seen 2\n");
    const rows = JSON.parse((await veil(["sessions", "--json"])).stdout) as { id: string; title: string }[];
    expect(rows).toHaveLength(2);
    // Most recently active first: "other", which --continue went on with, then "first".
    expect(rows.map((row) => row.title)).toEqual(["other", "first"]);
    expect((await veil(["run", "--session", rows[1]!.id, "back to the first"])).stdout).toBe("seen 2\n");
    const last = llm.completionRequests.at(-1)!.body.messages.filter((m: { role: string }) => m.role === "user").map((m: { content: string }) => m.content);
    expect(last).toEqual(["first", "back to the first"]);
    expect((await veil(["run", "-c", "again"])).stdout).toBe("seen 3\n");
    expect(llm.completionRequests.at(-1)!.body.messages.filter((m: { role: string }) => m.role === "user").at(0).content).toBe("first");

    const unknown = await veil(["run", "--session", "sess_nope", "hi"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('SESSION_NOT_FOUND: no session "sess_nope"\n');
  });

  it("--continue with no session says so", async () => {
    const result = await veil(["run", "--continue", "hi"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^SESSION_NOT_FOUND: no open top-level session to continue/);
  });

  it("thinking is dimmed and tool activity coloured only when colour is wanted", async () => {
    const turn = () => llm.enqueue(reply().thinking("pondering").tool("log_write", { message: "noted" }).stop(), reply().text("done").stop());
    turn();
    const piped = await veil(["run", "go"]);
    expect(piped.code).toBe(0);
    expect(piped.stderr).toContain("thinking: pondering");
    expect(piped.stderr + piped.stdout).not.toContain(ESC);
    turn();
    const forced = await veil(["run", "go"], { env: { FORCE_COLOR: "1" } });
    expect(forced.stderr).toContain(`${ESC}2mpondering${ESC}22m`);
    expect(forced.stderr).toContain(`${ESC}32m✓${ESC}39m log_write`);
    expect(forced.stdout).toBe("done\n");
    turn();
    const noColour = await veil(["run", "go"], { env: { FORCE_COLOR: "1", NO_COLOR: "1" } });
    expect(noColour.stderr).toContain("thinking: pondering");
    expect(noColour.stderr).not.toContain(ESC);
  });

  it.skipIf(!hasScript)("on a terminal: colours on, log lines as short text; NO_COLOR turns colour off", async () => {
    llm.enqueue(reply().thinking("hmm").text("answer").stop());
    const tty = await veilOnTty(["run", "go"]);
    expect(tty.code).toBe(0);
    expect(tty.stdout).toContain(`${ESC}2mhmm${ESC}22m`);
    expect(tty.stdout).toContain("answer");
    // A provider that refuses connections logs a warning: short text on a terminal, JSON with --log-format json.
    const down = { VEIL_BASE_URL: "http://127.0.0.1:9/v1" };
    const textLog = await veilOnTty(["run", "go"], down);
    expect(textLog.stdout).toMatch(/\d\d:\d\d:\d\d WARN  llm model failed/);
    expect(textLog.stdout).not.toMatch(/\{"level":/);
    const jsonLog = await veilOnTty(["run", "--log-format", "json", "go"], down);
    expect(jsonLog.stdout).toMatch(/\{"level":"warn","time":"[^"]+","msg":"llm model failed/);
    llm.enqueue(reply().thinking("hmm").text("answer").stop());
    const plain = await veilOnTty(["run", "go"], { NO_COLOR: "1" });
    expect(plain.stdout).toContain("thinking: hmm");
    expect(plain.stdout).not.toContain(ESC);
  });
});

describe.skipIf(!built)("veil run: configuration errors", () => {
  it("a provider key variable that is not set is CONFIG_ERROR naming it, exit 1, nothing sent", async () => {
    writeSettings({ providers: { main: { type: "openai", baseUrl: llm.baseUrl, apiKeyEnv: "VEIL_TEST_UNSET_KEY" } }, defaultProvider: "main", defaultModel: "main/m1" });
    const result = await veil(["run", "hi"], { env: { VEIL_BASE_URL: undefined, VEIL_API_KEY: undefined, VEIL_MODEL: undefined, VEIL_TEST_UNSET_KEY: undefined } });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^CONFIG_ERROR: .*VEIL_TEST_UNSET_KEY/);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(llm.completionRequests).toHaveLength(0);
  });

  it("no model configured is CONFIG_ERROR with the fix", async () => {
    const result = await veil(["run", "hi"], { env: { VEIL_MODEL: undefined } });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^CONFIG_ERROR: no model configured: set defaultModel/);
  });
  it("unknown keys in settings.json and agent.json: one warning each naming the file and the closest known key; the run goes on", async () => {
    writeSettings({ defaultModle: "typo", retry: { maxRetrys: 1 } });
    mkdirSync(join(ws.root, ".veil/agents/writer"), { recursive: true });
    writeFileSync(join(ws.root, ".veil/agents/writer/agent.json"), JSON.stringify({ budgett: { max_tokens: 5 } }));
    llm.enqueue(reply().text("fine").stop());
    const result = await veil(["run", "--agent", "writer", "hi"]);
    expect(result).toMatchObject({ code: 0, stdout: "fine\n" });
    const warnings = result.stderr.split("\n").filter(Boolean).map((line) => JSON.parse(line) as { level: string; msg: string });
    const veilDir = join(realpathSync(ws.root), ".veil");
    expect(warnings.map((w) => `${w.level} ${w.msg}`)).toEqual([
      `warn unknown key "defaultModle" in ${veilDir}/settings.json (did you mean "defaultModel"?); Veil does not use it`,
      `warn unknown key "retry.maxRetrys" in ${veilDir}/settings.json (did you mean "retry.maxRetries"?); Veil does not use it`,
      `warn unknown key "budgett" in ${veilDir}/agents/writer/agent.json (did you mean "budget"?); Veil does not use it`,
    ]);
  });
});

describe.skipIf(!built)("veil serve, tools and sessions", () => {
  it("serve warns at start when no model is configured; logs are JSON when not a TTY, text with --log-format text", async () => {
    const configured = await withServer([], async (url) => void (await fetch(`${url}/health`)));
    expect(configured.stderr).not.toMatch(/"level":"warn"/);

    const unconfigured = { VEIL_MODEL: undefined };
    const json = await withServer([], async (url, secret) => {
      // Sessions can still be created.
      const created = await fetch(`${url}/sessions`, { method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" }, body: "{}" });
      expect(created.status).toBe(201);
    }, unconfigured);
    const entries = json.stderr.split("\n").filter(Boolean).map((line) => JSON.parse(line) as { level: string; msg: string });
    expect(entries.find((e) => e.level === "warn")?.msg).toMatch(/^chat will fail until a model is configured: no model configured: set defaultModel/);
    // The next steps follow the listening line: a request answered means they were written.
    const text = await withServer(["--log-format", "text"], async (url) => void (await fetch(`${url}/health`)), unconfigured);
    expect(text.stderr).toMatch(/^\d\d:\d\d:\d\d WARN  chat will fail until a model is configured: /m);
    expect(text.stderr).not.toMatch(/\{"level"/);
    // What to do next: text lines for a person, one entry for a program reading JSON logs.
    expect(text.stderr).toMatch(/^Dashboard  http:\/\/127\.0\.0\.1:\d+\/ in a browser \(the same address serves the HTTP API\); sign in with the secret$/m);
    expect(text.stderr).toMatch(/^Secret     the --secret given$/m);
    expect(text.stderr).toMatch(/^API        curl -H "Authorization: Bearer \$VEIL_SECRET" http:\/\/127\.0\.0\.1:\d+\/sessions$/m);
    expect(text.stderr).toMatch(/^Model      not ready, chat fails until it is: no model configured/m);
    expect(text.stderr).toMatch(/^ {11}point it at any OpenAI-compatible endpoint, e\.g\. VEIL_BASE_URL=/m);
    const ready = configured.stderr.split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, string>).find((e) => e.msg === "what to do next");
    expect(ready).toMatchObject({ model: `fake-model (provider "env" at ${llm.baseUrl})` });
    expect(ready).not.toHaveProperty("modelHint");
  });

  it("veil tools prints descriptions; veil tools --json is the shape GET /tools answers", async () => {
    const text = await veil(["tools"]);
    expect(text.code).toBe(0);
    const bash = text.stdout.split("\n").find((line) => line.startsWith("bash "));
    expect(bash).toMatch(/^bash\s+builtin\s+always\s+Execute a shell command/);
    const cli = JSON.parse((await veil(["tools", "--json"])).stdout);
    await withServer([], async (url, secret) => {
      const http = await (await fetch(`${url}/tools`, { headers: { authorization: `Bearer ${secret}` } })).json();
      expect(cli).toEqual(http);
    });
    expect(cli.length).toBeGreaterThanOrEqual(24);
  });

  it("veil skills lists skills in effect, shadowed and broken with their folders; --json is what GET /skills answers", async () => {
    const skill = (name: string, description: string) => `---\nname: ${name}\ndescription: ${description}\n---\n# ${name}\nThe steps.\n`;
    const files: Record<string, string> = {
      ".veil/skills/pdf-forms/SKILL.md": skill("pdf-forms", "Fill in PDF forms."),
      ".veil/skills/pdf-forms/fill.py": "print('fill')\n",
      ".claude/skills/pdf-forms/SKILL.md": skill("pdf-forms", "An older copy."),
      ".claude/skills/no-front-matter/SKILL.md": "just text\n",
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(ws.root, path, ".."), { recursive: true });
      writeFileSync(join(ws.root, path), text);
    }
    const root = realpathSync(ws.root);
    const text = await veil(["skills"]);
    expect(text.code).toBe(0);
    const lines = text.stdout.split("\n");
    const active = lines.findIndex((line) => /^pdf-forms\s+project\s+active\s+Fill in PDF forms\.$/.test(line));
    expect(active).toBeGreaterThanOrEqual(0);
    expect(lines[active + 1]!.trim()).toBe(join(root, ".veil/skills/pdf-forms"));
    const shadowed = lines.findIndex((line) => /^pdf-forms\s+\S+\s+shadowed\s+An older copy\.$/.test(line));
    expect(lines[shadowed + 1]!.trim()).toBe(`${join(root, ".claude/skills/pdf-forms")} (shadowed by ${join(root, ".veil/skills/pdf-forms")})`);
    expect(lines.find((line) => line.startsWith("(broken) "))).toContain(join(root, ".claude/skills/no-front-matter/SKILL.md"));
    const cli = JSON.parse((await veil(["skills", "--json"])).stdout);
    expect(cli.map((entry: { state: string }) => entry.state)).toEqual(["active", "shadowed", "broken"]);
    await withServer([], async (url, secret) => {
      expect(await (await fetch(`${url}/skills`, { headers: { authorization: `Bearer ${secret}` } })).json()).toEqual(cli);
    });
    const unknown = await veil(["skills", "--agent", "nobody"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('AGENT_NOT_FOUND: no agent named "nobody"');
  });

  it("veil tools --agent NAME shows a custom tool's description and folder; --json (with the folder) is what GET /tools?agent= answers, and matches its OpenAPI schema", async () => {
    const tool = (name: string) => ({ "tool.json": JSON.stringify({ name, description: `${name} upper-cases text.\nSecond line.`, input_schema: { type: "object", properties: { text: { type: "string" } } } }), "index.js": "module.exports = async function execute(i) { return i.text.toUpperCase(); };\n" });
    const files: Record<string, string> = { ".veil/agents/writer/agent.json": JSON.stringify({ description: "writes" }), ".veil/tools/broken_one/tool.json": "{ not json" };
    for (const [folder, name] of [[".veil/tools/echo_upper", "echo_upper"], [".veil/agents/writer/tools/shout", "shout"]] as const) {
      for (const [file, text] of Object.entries(tool(name))) files[`${folder}/${file}`] = text;
    }
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(ws.root, path, ".."), { recursive: true });
      writeFileSync(join(ws.root, path), text);
    }
    const veilDir = join(realpathSync(ws.root), ".veil");
    const text = await veil(["tools", "--agent", "writer"]);
    expect(text.code).toBe(0);
    const lines = text.stdout.split("\n");
    const at = (name: string) => lines.findIndex((line) => line.startsWith(`${name} `));
    expect(lines[at("echo_upper")]).toMatch(/^echo_upper\s+custom\s+available\s+echo_upper upper-cases text\.$/);
    expect(lines[at("echo_upper") + 1]).toBe(`${" ".repeat(47)}project ${veilDir}/tools/echo_upper`);
    expect(lines[at("shout")]).toMatch(/^shout\s+custom\s+available\s+shout upper-cases text\.$/);
    expect(lines[at("shout") + 1]).toBe(`${" ".repeat(47)}agent ${veilDir}/agents/writer/tools/shout`);
    // Built-ins have no source line: the next line is the next tool.
    expect(lines[at("bash") + 1]).toMatch(/^\S/);
    expect(text.stdout).toContain(`(broken) ${veilDir}/tools/broken_one: `);

    const cli = JSON.parse((await veil(["tools", "--agent", "writer", "--json"])).stdout) as Record<string, unknown>[];
    expect(cli.find((t) => t.name === "echo_upper")).toMatchObject({ tier: "custom", scope: "project", folder: `${veilDir}/tools/echo_upper`, description: "echo_upper upper-cases text.\nSecond line." });
    expect(cli.find((t) => t.name === "shout")).toMatchObject({ scope: "agent", folder: `${veilDir}/agents/writer/tools/shout` });
    await withServer([], async (url, secret) => {
      const headers = { authorization: `Bearer ${secret}` };
      expect(await (await fetch(`${url}/tools?agent=writer`, { headers })).json()).toEqual(cli);
      const doc = (await (await fetch(`${url}/openapi.json`, { headers })).json()) as { paths: Record<string, { get: { responses: Record<string, { content: Record<string, { schema: object }> }> } }> };
      const schema = doc.paths["/tools"]!.get.responses["200"]!.content["application/json"]!.schema as { items: { anyOf: { properties: Record<string, unknown> }[] } };
      expect(schema.items.anyOf[0]!.properties.folder).toMatchObject({ type: "string" });
      const validate = new Ajv({ strict: false }).compile(schema);
      expect(validate(cli), JSON.stringify(validate.errors)).toBe(true);
    });
  });

  it("veil sessions says so when there are none", async () => {
    const result = await veil(["sessions"]);
    expect(result).toMatchObject({ code: 0, stdout: `no open sessions in ${ws.root}\n` });
  });
});


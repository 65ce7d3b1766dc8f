import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";
import { spawnVeil, veilBuilt, type Spawned, type SpawnVeilOptions } from "../helpers/cli.js";

const built = veilBuilt;

let llm: FakeLlm;
let ws: TempWorkspace;
let env: Record<string, string>;

beforeEach(async () => {
  llm = await startFakeLlm();
  ws = tmpWorkspace();
  mkdirSync(join(ws.root, "home"), { recursive: true });
  env = { ...(process.env as Record<string, string>), VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk", VEIL_MODEL: "fake-model", VEIL_HOME: join(ws.root, "home") };
  delete env.VEIL_SECRET;
});
afterEach(async () => {
  await llm.close();
  ws.cleanup();
});

function veil(args: string[], options: Omit<SpawnVeilOptions, "cwd" | "env"> & { env?: Record<string, string | undefined> } = {}): Promise<Spawned> {
  return spawnVeil(args, { ...options, cwd: ws.root, env: { ...env, ...options.env } });
}

describe.skipIf(!built)("veil CLI (spawned)", () => {
  it("veil run streams the reply to stdout, tool activity to stderr, exits 0", async () => {
    llm.enqueue(reply().tool("log_write", { message: "checked the thing" }).stop());
    llm.enqueue(reply().text("All ").text("good.").stop());
    const result = await veil(["run", "check the thing"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("All good.\n");
    expect(result.stderr).toMatch(/log_write/);
    expect(result.stderr).toMatch(/checked the thing/);
    expect(llm.completionRequests[0]!.body.messages.at(-1)).toMatchObject({ role: "user", content: "check the thing" });
  });

  it("veil run --json prints every event as one JSON line", async () => {
    llm.enqueue(reply().text("hi").stop());
    const result = await veil(["run", "--json", "hello"]);
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.map((e) => e.type)).toEqual(["session.state", "chat.message", "chat.chunk", "chat.message", "session.state", "chat.done"]);
    expect(lines[5]).toMatchObject({ type: "chat.done", content: "hi", finishReason: "stop" });
  });

  it("veil run exits non-zero with a clear message when the provider fails", async () => {
    await llm.close();
    const result = await veil(["run", "hello"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^[A-Z_]+_ERROR: .*ECONNREFUSED/m);
  });

  it("veil run --model overrides the model; unknown flags are a usage error", async () => {
    llm.respond((req) => reply().text(`model ${req.body.model}`).stop());
    const ok = await veil(["run", "--model", "other-model", "hi"]);
    expect(ok.stdout.trim()).toBe("model other-model");
    const bad = await veil(["run", "--bogus", "hi"]);
    expect(bad.code).toBe(64);
    expect(bad.stderr.split("\n")[0]).toBe("veil run: unknown option --bogus");
    expect(bad.stderr).toMatch(/Usage: veil run /);
  });

  it("veil agents / tools / sessions list what they say", async () => {
    mkdirSync(join(ws.root, ".veil/agents/helper"), { recursive: true });
    writeFileSync(join(ws.root, ".veil/agents/helper/agent.json"), JSON.stringify({ description: "helps out" }));
    const agents = await veil(["agents"]);
    expect(agents.code).toBe(0);
    expect(agents.stdout).toMatch(/default/);
    expect(agents.stdout).toMatch(/helper .*helps out/);
    const tools = await veil(["tools", "--agent", "default"]);
    expect(tools.code).toBe(0);
    expect(tools.stdout).toMatch(/log_write/);
    llm.enqueue(reply().text("x").stop());
    await veil(["run", "one"]);
    const sessions = await veil(["sessions", "--json"]);
    const rows = JSON.parse(sessions.stdout);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ agent: "default", status: "idle" });
  });

  it("a config error names the file and the field", async () => {
    mkdirSync(join(ws.root, ".veil"), { recursive: true });
    writeFileSync(join(ws.root, ".veil/settings.json"), JSON.stringify({ fallbackModels: "not-a-list" }));
    const result = await veil(["agents"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(join(ws.root, ".veil/settings.json"));
    expect(result.stderr).toMatch(/fallbackModels/);
  });

  it("veil serve prints the listening line, generates a 0600 secret, and stops cleanly on SIGTERM", async () => {
    let url = "";
    const result = await veil(["serve", "--port", "0"], {
      onStdout: (text, kill) => {
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(text);
        if (match && !url) {
          url = match[1]!;
          void fetch(`${url}/health`).then(async (r) => {
            expect(r.status).toBe(200);
            kill();
          });
        }
      },
    });
    expect(url).not.toBe("");
    expect(result.code).toBe(0);
    const secretFile = join(ws.root, ".veil/secret");
    expect((statSync(secretFile).mode & 0o777).toString(8)).toBe("600");
    expect(result.stderr).toContain(readFileSync(secretFile, "utf8").trim());
  });
});

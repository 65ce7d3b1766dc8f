import { afterEach, beforeEach, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { spawnVeil, veilBuilt, type Spawned } from "../helpers/cli.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { createRuntime } from "../../src/runtime.js";
import { memoryLogger } from "../../src/base/log.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let llm: FakeLlm;
let ws: TempWorkspace;
let env: Record<string, string>;
let served: RuntimeHarness | undefined;

beforeEach(async () => {
  llm = await startFakeLlm();
  ws = tmpWorkspace();
  mkdirSync(join(ws.root, "home"), { recursive: true });
  env = { ...(process.env as Record<string, string>), VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk", VEIL_MODEL: "fake-model", VEIL_HOME: join(ws.root, "home"), HOME: join(ws.root, "home") };
  for (const key of ["VEIL_SECRET", "NO_COLOR", "FORCE_COLOR", "VEIL_LOG_LEVEL", "VEIL_DATABASE_URL"]) delete env[key];
});
afterEach(async () => {
  await served?.close();
  served = undefined;
  await llm.close();
  ws.cleanup();
});

const veil = (args: string[], cwd = ws.root): Promise<Spawned> => spawnVeil(args, { cwd, env });

type Row = { id: string; title: string | null; status: string; origin: string; ephemeral: boolean };
const listed = async (...args: string[]): Promise<Row[]> => JSON.parse((await veil(["sessions", "--json", ...args])).stdout) as Row[];

/** A session's last activity moved into the past, in the workspace's SQLite file. */
function idleFor(root: string, id: string, ms: number): void {
  const db = new Database(join(root, ".veil", "veil.db"));
  try {
    db.prepare("UPDATE sessions SET updated_at = ? WHERE id = ?").run(new Date(Date.now() - ms).toISOString(), id);
  } finally {
    db.close();
  }
}

const DAY = 86_400_000;

async function runs(...prompts: string[]): Promise<Row[]> {
  for (const prompt of prompts) {
    llm.enqueue(reply().text("ok").stop());
    expect((await veil(["run", prompt])).code).toBe(0);
  }
  return listed();
}

/**
 * Sessions as `veil run` leaves them (origin run, ephemeral, titled by their prompt), made in
 * process to spare a spawn each; newest first, as listings order them.
 */
async function oneShotSessions(...titles: string[]): Promise<Row[]> {
  const runtime = await createRuntime({ workspace: ws.root, mode: "oneshot", env, log: memoryLogger() });
  try {
    const rows: Row[] = [];
    for (const title of titles) {
      rows.unshift((await runtime.sessions.create({ agent: "default", origin: "run", ephemeral: true, title })) as unknown as Row);
      // Each a millisecond later than the one before, so last activity orders them.
      for (const start = Date.now(); Date.now() === start; ) await new Promise((resolve) => setImmediate(resolve));
    }
    return rows;
  } finally {
    await runtime.close();
  }
}

// Each test spawns veil several times: a loaded machine needs more than the default 30 s.
describe.skipIf(!veilBuilt)("veil sessions", { timeout: 120_000 }, () => {
  it("lists open sessions most recently active first, with their title from the first prompt; --search and --all narrow or widen it", async () => {
    const rows = await runs("Summarise the README for a newcomer", "List the TODO comments\nin src/");
    expect(rows.map((r) => [r.title, r.origin, r.ephemeral])).toEqual([
      ["List the TODO comments in src/", "run", true],
      ["Summarise the README for a newcomer", "run", true],
    ]);
    const text = await veil(["sessions"]);
    expect(text.code).toBe(0);
    const lines = text.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(new RegExp(`^${rows[0]!.id}  idle\\s+\\d+s ago  default\\s+\\[run\\] List the TODO comments in src/$`));
    expect(lines[1]).toContain("Summarise the README for a newcomer");

    expect((await listed("--search", "readme")).map((r) => r.id)).toEqual([rows[1]!.id]);
    expect((await veil(["sessions", "--search", "nothing-like-it"])).stdout).toBe(`no session matches "nothing-like-it" in ${ws.root}\n`);
    await veil(["sessions", "close", rows[1]!.id]);
    expect((await listed()).map((r) => r.id)).toEqual([rows[0]!.id]);
    expect((await listed("--all")).map((r) => [r.id, r.status])).toEqual([
      [rows[1]!.id, "closed"],
      [rows[0]!.id, "idle"],
    ]);
  });

  it("close ID… closes each one named; an unknown id is reported on stderr and makes the exit 1", async () => {
    const [a, b, c] = await oneShotSessions("one", "two", "three");
    const result = await veil(["sessions", "close", a!.id, "sess_nope", c!.id]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(`closed ${a!.id}  three\nclosed ${c!.id}  one\n`);
    expect(result.stderr).toBe('SESSION_NOT_FOUND: no session "sess_nope"\n');
    expect((await listed()).map((r) => r.id)).toEqual([b!.id]);
    expect(await veil(["sessions", "close", b!.id])).toMatchObject({ code: 0, stdout: `closed ${b!.id}  two\n` });
    const usage = await veil(["sessions", "close"]);
    expect(usage.code).toBe(64);
    expect(usage.stderr.split("\n")[0]).toBe("veil sessions close: name the sessions to close (their ids, as veil sessions lists them)");
  });

  it("prune --idle 7d closes every open session idle that long; --dry-run only lists them", async () => {
    const [fresh, old, older] = await oneShotSessions("older", "old", "fresh");
    idleFor(ws.root, old!.id, 8 * DAY);
    idleFor(ws.root, older!.id, 40 * DAY);
    const dry = await veil(["sessions", "prune", "--idle", "7d", "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toBe(`would close ${older!.id}  idle 40d  older\nwould close ${old!.id}  idle 8d  old\n`);
    expect(await listed()).toHaveLength(3);
    const pruned = await veil(["sessions", "prune", "--idle", "7d"]);
    expect(pruned).toMatchObject({ code: 0, stdout: `closed ${older!.id}  older\nclosed ${old!.id}  old\nclosed 2 sessions idle for 7d or more\n` });
    expect((await listed()).map((r) => r.id)).toEqual([fresh!.id]);
    expect((await veil(["sessions", "prune", "--idle", "7d"])).stdout).toBe("no open session idle for 7d or more\n");
    for (const [args, problem] of [
      [[], "veil sessions prune: --idle DURATION is required (e.g. --idle 7d)"],
      [["--idle", "7"], 'veil sessions prune: --idle takes a number and a unit (90s, 30m, 24h, 7d, 2w), got "7"'],
    ] as const) {
      const bad = await veil(["sessions", "prune", ...args]);
      expect(bad.code).toBe(64);
      expect(bad.stderr.split("\n")[0]).toBe(problem);
    }
  });

  it("a one-shot session nobody continued is closed once idle past limits.idleSessionTtl (24h); --continue within it keeps the session", async () => {
    const [forgotten] = await oneShotSessions("forgotten");
    idleFor(ws.root, forgotten!.id, 25 * 3_600_000);
    const late = await veil(["run", "--continue", "go on"]);
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/^SESSION_NOT_FOUND: no open top-level session to continue/);
    expect((await listed("--all"))[0]).toMatchObject({ id: forgotten!.id, status: "closed" });

    const [kept] = await runs("kept");
    llm.enqueue(reply().text("continued").stop());
    expect(await veil(["run", "--continue", "go on"])).toMatchObject({ code: 0, stdout: "continued\n" });
    expect((await listed())[0]).toMatchObject({ id: kept!.id, ephemeral: false, title: "kept" });
    idleFor(ws.root, kept!.id, 30 * DAY);
    llm.enqueue(reply().text("still there").stop());
    expect(await veil(["run", "--session", kept!.id, "and again"])).toMatchObject({ code: 0, stdout: "still there\n" });
  });
});

describe.skipIf(!veilBuilt)("veil sessions close beside a running veil serve", { timeout: 120_000 }, () => {
  async function serve() {
    served = await createRuntimeHarness({ llm });
    const server = await served.serve();
    const http = (path: string, init: RequestInit = {}) => server.fetch(path, init);
    const root = served.ws.root;
    const cli = (args: string[]) => spawnVeil(args, { cwd: root, env: { ...env, VEIL_HOME: served!.env.VEIL_HOME, HOME: served!.env.VEIL_HOME } });
    return { http, root, cli };
  }

  it("the server lets go of a session the CLI closed: its shell is ended at the next sweep", async () => {
    const { http, root, cli } = await serve();
    const id = ((await (await http("/sessions", { method: "POST", body: "{}" })).json()) as Row).id;
    llm.enqueue(reply().tool("bash", { command: "echo $VEIL_SHELL_TAG > shell.tag; sleep 600 > /dev/null 2>&1 &" }).stop(), reply().text("ok").stop());
    expect((await http(`/sessions/${id}/chat`, { method: "POST", body: JSON.stringify({ message: "note your tag" }) })).status).toBe(200);
    // The shell may be PID 1 of its own namespace: its processes are found on this host by the tag they inherit.
    const tag = readFileSync(join(root, "shell.tag"), "utf8").trim();
    expect(tagged(tag).length).toBeGreaterThan(0);
    expect(await cli(["sessions", "close", id])).toMatchObject({ code: 0, stdout: `closed ${id}  note your tag\n` });
    expect(tagged(tag).length).toBeGreaterThan(0);
    await served!.runtime.sweeper!.sweep();
    await expect.poll(() => tagged(tag), { timeout: 10_000 }).toEqual([]);
    expect(((await (await http(`/sessions/${id}`)).json()) as Row).status).toBe("closed");
  });

  it("a session running in the server is left to it: SESSION_BUSY, exit 1, the turn goes on", async () => {
    const { http, cli } = await serve();
    const id = ((await (await http("/sessions", { method: "POST", body: "{}" })).json()) as Row).id;
    let release!: () => void;
    llm.enqueue(reply().text("slow ").waitFor(new Promise<void>((resolve) => (release = resolve))).text("answer").stop());
    const turn = http(`/sessions/${id}/chat`, { method: "POST", body: JSON.stringify({ message: "take your time" }) });
    await expect.poll(async () => ((await (await http(`/sessions/${id}`)).json()) as Row).status).toBe("running");
    const busy = await cli(["sessions", "close", id]);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(new RegExp(`^SESSION_BUSY: session "${id}" is running in another process`));
    release();
    expect(((await (await turn).json()) as { content: string }).content).toBe("slow answer");
  });
});

/** Processes of this machine whose environment carries VEIL_SHELL_TAG=<tag>. */
function tagged(tag: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, "latin1").split("\0").includes(`VEIL_SHELL_TAG=${tag}`)) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

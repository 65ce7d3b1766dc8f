import { spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { memoryLogger } from "../../src/base/log.js";
import { createRuntime } from "../../src/runtime.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";
import { present } from "../helpers/requirements.js";

const MAIN = join(process.cwd(), "dist/src/main.js");
let ws: TempWorkspace;
let llm: FakeLlm;

beforeEach(async () => {
  ws = tmpWorkspace();
  llm = await startFakeLlm();
});
afterEach(async () => {
  await llm.close();
  ws.cleanup();
});

function veilRun(prompt: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env, VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk-test", VEIL_MODEL: "fake-model", VEIL_HOME: join(ws.root, ".home") };
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, "run", "--workspace", ws.root, prompt], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += String(d)));
    child.stderr.on("data", (d) => (stderr += String(d)));
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

describe.skipIf(!present(`the build (${MAIN})`, existsSync(MAIN)))("veil run touches no session but its own", () => {
  it("leaves another session's overdue wake-up, queued inbox message and interrupted run alone", async () => {
    mkdirSync(join(ws.root, ".veil"), { recursive: true });
    const store = SqliteStore.open(join(ws.root, ".veil", "veil.db"));
    await store.createSession({ id: "sess_other", agent: "default", mode: "chat" });
    await store.setWakeup({ session_id: "sess_other", time: "1", interval_ms: 1000, message: "wake up", loop: false, next_fire_at: Date.now() - 60_000, created_at: new Date().toISOString() });
    await store.createSession({ id: "sess_queued", agent: "default", mode: "chat" });
    await store.addInbox({ id: "msg_waiting", session_id: "sess_queued", content: "queued before", meta: null, created_at: new Date().toISOString() });
    await store.createSession({ id: "sess_cut", agent: "default", mode: "chat", status: "running" });
    await store.close();

    llm.enqueue(reply().text("only mine").stop());
    const result = await veilRun("hello");
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe("only mine\n");
    expect(llm.completionRequests).toHaveLength(1);
    expect(llm.completionRequests[0]!.body.messages.at(-1)).toMatchObject({ role: "user", content: "hello" });

    const after = SqliteStore.open(join(ws.root, ".veil", "veil.db"));
    try {
      expect(await after.getWakeup("sess_other")).toMatchObject({ message: "wake up" });
      expect(await after.listMessages("sess_other")).toEqual([]);
      expect((await after.listInbox("sess_queued")).map((i) => i.id)).toEqual(["msg_waiting"]);
      expect((await after.getSession("sess_cut"))?.status).toBe("running");
    } finally {
      await after.close();
    }
  });
});

describe.skipIf(!present(`the build (${MAIN})`, existsSync(MAIN)))("limits.maxLiveSessions counts the sessions a process holds", () => {
  it("lets one-shot runs go on past the cap (their sessions stay open in the store), while one process still cannot open more than the cap", async () => {
    mkdirSync(join(ws.root, ".veil"), { recursive: true });
    writeFileSync(join(ws.root, ".veil", "settings.json"), JSON.stringify({ limits: { maxLiveSessions: 2 } }));
    for (let i = 0; i < 3; i++) {
      llm.enqueue(reply().text(`run ${i}`).stop());
      const result = await veilRun(`prompt ${i}`);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toBe(`run ${i}\n`);
    }
    const store = SqliteStore.open(join(ws.root, ".veil", "veil.db"));
    try {
      expect((await store.listSessions()).filter((s) => s.status !== "closed")).toHaveLength(3);
    } finally {
      await store.close();
    }

    const runtime = await createRuntime({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, ".home"), VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk-test", VEIL_MODEL: "fake-model" }, log: memoryLogger() });
    try {
      const first = await runtime.sessions.create({ agent: "default" });
      await runtime.sessions.create({ agent: "default" });
      await expect(runtime.sessions.create({ agent: "default" })).rejects.toMatchObject({ code: "TOO_MANY_SESSIONS", message: expect.stringContaining("limit 2, settings.limits.maxLiveSessions") });
      await runtime.sessions.close(first.id);
      await expect(runtime.sessions.create({ agent: "default" })).resolves.toMatchObject({ agent: "default" });
    } finally {
      await runtime.close();
    }
  });
});

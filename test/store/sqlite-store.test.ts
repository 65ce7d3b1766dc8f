import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { isVeilError } from "../../src/errors.js";
import { applyMigrations, MIGRATIONS } from "../../src/store/sqlite/migrations.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { storeConformance } from "../conformance/store.js";
import { unavailableUnlessCI } from "../helpers/requirements.js";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SOURCE = join(REPO, "src/store/sqlite/sqlite-store.ts");
const BUILT = join(REPO, "dist/src/store/sqlite/sqlite-store.js");

/** The child-process tests need plain JS: the build output (npm test builds first). */
function builtStoreProblem(): string | undefined {
  if (!existsSync(BUILT)) return `${BUILT} is missing; run \`npm run build\` (npm test does) to enable process tests`;
  if (statSync(BUILT).mtimeMs < statSync(SOURCE).mtimeMs) return `${BUILT} is older than its source; run \`npm run build\``;
  return undefined;
}
const skipProcessTests = unavailableUnlessCI(builtStoreProblem());
if (skipProcessTests) console.warn(`[sqlite-store.test] skipping child-process tests: ${skipProcessTests}`);

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "veil-store-"));
}

storeConformance("SqliteStore", async () => {
  const dir = tempDir();
  const path = join(dir, "veil.db");
  return {
    store: SqliteStore.open(path),
    reopen: async () => SqliteStore.open(path),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
});

/** Runs a node child; resolves with its exit once it ends. `onLine` sees stdout lines. */
function runChild(script: string, args: string[], onLine?: (line: string, kill: () => void) => void) {
  const child = spawn(process.execPath, [script, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  let buffer = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdout.on("data", (d: Buffer) => {
    buffer += d.toString();
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      onLine?.(line, () => child.kill("SIGKILL"));
    }
  });
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((done, fail) => {
    child.on("error", fail);
    child.on("close", (code, signal) => done({ code, signal, stderr }));
  });
}

describe("SqliteStore (SQLite specifics)", () => {
  let dir: string;
  let dbPath: string;
  const open: SqliteStore[] = [];
  const openStore = (options?: Parameters<typeof SqliteStore.open>[1]) => {
    const store = SqliteStore.open(dbPath, options);
    open.push(store);
    return store;
  };

  beforeEach(() => {
    dir = tempDir();
    dbPath = join(dir, "nested", "deeper", "veil.db");
  });

  afterEach(async () => {
    for (const store of open.splice(0)) await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates the parent folder and the file", () => {
    openStore();
    expect(existsSync(dbPath)).toBe(true);
  });

  it("sets WAL, synchronous NORMAL, foreign keys and a busy timeout", () => {
    const db = openStore().connection;
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.pragma("synchronous", { simple: true })).toBe(1);
    expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
    expect(db.pragma("busy_timeout", { simple: true })).toBe(5000);
  });

  it("can use synchronous FULL for power-loss durability", () => {
    expect(openStore({ synchronous: "FULL" }).connection.pragma("synchronous", { simple: true })).toBe(2);
  });

  it("applies migrations once; reopening an up-to-date database is a no-op", async () => {
    const first = openStore();
    await first.createSession({ id: "s1", agent: "a", mode: "chat" });
    const versions = () =>
      first.connection.prepare("SELECT version FROM schema_migrations ORDER BY version").all() as { version: number }[];
    expect(versions().map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
    await first.close();

    const second = openStore();
    const rows = second.connection.prepare("SELECT version, applied_at FROM schema_migrations").all();
    expect(rows).toHaveLength(MIGRATIONS.length);
    expect(applyMigrations(second.connection, new Date().toISOString())).toEqual([]);
    expect((await second.getSession("s1"))?.id).toBe("s1");
    const tables = (
      second.connection.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]
    ).map((t) => t.name);
    expect(tables).toEqual(
      expect.arrayContaining(["audit", "inbox", "messages", "read_markers", "schema_migrations", "session_meta", "sessions", "todos", "tool_calls", "wakeups"]),
    );
  });

  it("search folds case as JavaScript does, beyond ASCII", async () => {
    const store = openStore();
    await store.createSession({ id: "s1", agent: "a", mode: "chat", title: "Über die Grenze" });
    await store.createSession({ id: "s2", agent: "a", mode: "chat", title: "ÉTÉ à Paris" });
    expect((await store.listSessions({ query: "über" })).map((r) => r.id)).toEqual(["s1"]);
    expect((await store.listSessions({ query: "été À" })).map((r) => r.id)).toEqual(["s2"]);
  });

  it("a database made before titles upgrades in place: its sessions get no title, origin api, not ephemeral", async () => {
    const db = new Database(dbPath.replace(/veil\.db$/, "old.db").replace("nested/deeper/", ""));
    applyMigrations(db, "2026-01-01T00:00:00.000Z", MIGRATIONS.filter((m) => m.version <= 2));
    db.prepare("INSERT INTO sessions (id, agent, mode, status, created_at, updated_at) VALUES ('old', 'default', 'chat', 'idle', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')").run();
    db.close();
    const store = SqliteStore.open(join(dir, "old.db"));
    open.push(store);
    expect(await store.getSession("old")).toMatchObject({ id: "old", title: null, origin: "api", ephemeral: false });
  });

  it("applies only the missing migrations, in order, and records each", () => {
    const db = new Database(join(dir, "m.db"));
    try {
      const steps = [
        { version: 2, name: "second", up: "CREATE TABLE b (x INTEGER)" },
        { version: 1, name: "first", up: "CREATE TABLE a (x INTEGER)" },
      ];
      expect(applyMigrations(db, "2026-01-01T00:00:00.000Z", steps.slice(1))).toEqual([1]);
      expect(applyMigrations(db, "2026-01-02T00:00:00.000Z", steps)).toEqual([2]);
      expect(applyMigrations(db, "2026-01-03T00:00:00.000Z", steps)).toEqual([]);
      expect(db.prepare("SELECT version, name, applied_at FROM schema_migrations ORDER BY version").all()).toEqual([
        { version: 1, name: "first", applied_at: "2026-01-01T00:00:00.000Z" },
        { version: 2, name: "second", applied_at: "2026-01-02T00:00:00.000Z" },
      ]);
    } finally {
      db.close();
    }
  });

  it("rolls a failing migration back entirely", () => {
    const db = new Database(join(dir, "m.db"));
    try {
      const steps = [
        { version: 1, name: "ok", up: "CREATE TABLE a (x INTEGER)" },
        { version: 2, name: "broken", up: "CREATE TABLE b (x INTEGER); THIS IS NOT SQL" },
      ];
      expect(() => applyMigrations(db, "2026-01-01T00:00:00.000Z", steps)).toThrow();
      expect(db.prepare("SELECT name FROM sqlite_master WHERE name IN ('a', 'b')").all()).toEqual([]);
      expect(db.prepare("SELECT COUNT(*) AS n FROM schema_migrations").get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
  });

  it("refuses a database written by a newer schema with CONFIG_ERROR", async () => {
    const store = openStore();
    store.connection.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'x')").run();
    await store.close();
    let error: unknown;
    try {
      openStore();
    } catch (e) {
      error = e;
    }
    expect(isVeilError(error) && error.code).toBe("CONFIG_ERROR");
  });

  it("stamps times from the injected clock", async () => {
    const clock = new ManualClock(Date.UTC(2030, 4, 6, 7, 8, 9));
    const store = openStore({ clock });
    const session = await store.createSession({ id: "s1", agent: "a", mode: "chat" });
    expect(session.created_at).toBe("2030-05-06T07:08:09.000Z");
    await clock.advance(1500);
    const message = await store.appendMessage({ id: "m1", session_id: "s1", role: "user", content: "x" });
    expect(message.created_at).toBe("2030-05-06T07:08:10.500Z");
    expect((await store.updateSession("s1", { status: "running" })).updated_at).toBe("2030-05-06T07:08:10.500Z");
  });

  it("rejects calls after close with a clear error", async () => {
    const store = openStore();
    await store.close();
    await expect(store.getSession("s1")).rejects.toThrow(/closed/);
  });

  it("keeps seq unique and gap-free when two connections append to one session interleaved", async () => {
    const a = openStore();
    const b = openStore();
    await a.createSession({ id: "s1", agent: "a", mode: "chat" });
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 50; i++) {
      writes.push(a.appendMessage({ id: `a${i}`, session_id: "s1", role: "user", content: "a" }));
      writes.push(b.appendMessage({ id: `b${i}`, session_id: "s1", role: "assistant", content: "b" }));
    }
    await Promise.all(writes);
    const rows = await b.listMessages("s1");
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(rows.slice(0, 4).map((r) => r.id)).toEqual(["a0", "b0", "a1", "b1"]);
    expect((await a.listMessages("s1")).map((r) => r.id)).toEqual(rows.map((r) => r.id));
  });

  it("never delivers an inbox item twice across two connections", async () => {
    const a = openStore();
    const b = openStore();
    await a.createSession({ id: "s1", agent: "a", mode: "chat" });
    const ids = Array.from({ length: 10 }, (_, i) => `i${i}`);
    for (const id of ids) await a.addInbox({ id, session_id: "s1", content: id, meta: null, created_at: "2026-01-01T00:00:00.000Z" });
    const deliveries = ids.map((id) => ({ inboxId: id, message: { id: `m-${id}`, session_id: "s1", role: "user" as const, content: id } }));
    const [ra, rb] = await Promise.all([a.deliverInbox("s1", deliveries), b.deliverInbox("s1", deliveries)]);
    expect(ra.length + rb.length).toBe(10);
    expect((await a.listMessages("s1")).map((m) => m.id)).toEqual(ids.map((id) => `m-${id}`));
    expect(await b.sessionsWithInbox()).toEqual([]);
  });

  describe.skipIf(skipProcessTests !== undefined)("across processes (uses the build output)", () => {
    const childScript = (name: string, body: string) => {
      const file = join(dir, name);
      writeFileSync(file, `import { SqliteStore } from ${JSON.stringify(BUILT)};\n${body}\n`);
      return file;
    };

    it("keeps acknowledged messages when the writer is SIGKILLed right after the ack", async () => {
      const setup = SqliteStore.open(dbPath);
      await setup.createSession({ id: "s1", agent: "a", mode: "chat" });
      await setup.close();
      const script = childScript(
        "crash.mjs",
        `const store = SqliteStore.open(process.argv[2]);
for (let i = 1; i <= 25; i++) {
  await store.appendMessage({ id: "m" + i, session_id: "s1", role: "user", content: "payload " + i, meta: { i } });
}
process.stdout.write("acked\\n");
setInterval(() => {}, 60_000);`,
      );
      let acked = false;
      const exit = await runChild(script, [dbPath], (line, kill) => {
        if (line === "acked") {
          acked = true;
          kill();
        }
      });
      expect(exit.stderr).toBe("");
      expect(acked).toBe(true);
      expect(exit.signal).toBe("SIGKILL");

      const reopened = openStore();
      const rows = await reopened.listMessages("s1");
      expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
      expect(rows.at(-1)).toMatchObject({ id: "m25", content: "payload 25", meta: { i: 25 } });
    });

    it("keeps seq unique and gap-free with two writer processes on one session", async () => {
      const setup = openStore();
      await setup.createSession({ id: "s1", agent: "a", mode: "chat" });
      const script = childScript(
        "writer.mjs",
        `const [path, tag] = process.argv.slice(2);
const store = SqliteStore.open(path);
for (let i = 0; i < 150; i++) {
  await store.appendMessage({ id: tag + i, session_id: "s1", role: "user", content: tag });
}
await store.close();`,
      );
      const [x, y] = await Promise.all([runChild(script, [dbPath, "x"]), runChild(script, [dbPath, "y"])]);
      expect([x.code, x.stderr, y.code, y.stderr]).toEqual([0, "", 0, ""]);
      const rows = await setup.listMessages("s1");
      expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
      for (const tag of ["x", "y"]) {
        const own = rows.filter((r) => r.content === tag).map((r) => r.id);
        expect(own).toEqual(Array.from({ length: 150 }, (_, i) => `${tag}${i}`));
      }
    });
  });
});

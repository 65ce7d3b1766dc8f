import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { lazyStatements } from "../../src/store/sqlite/statements.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The store's prepared-statement sets (private fields, looked at by name). */
const STATEMENT_SETS = ["stmts", "automation", "cp", "access"] as const;

function openStore(): SqliteStore {
  const dir = mkdtempSync(join(tmpdir(), "veil-stmts-"));
  dirs.push(dir);
  return SqliteStore.open(join(dir, "veil.db"));
}

describe("SQLite statements", () => {
  it("opening the store prepares none of them; each is prepared on first use and then kept", async () => {
    const store = openStore();
    const sets = STATEMENT_SETS.map((name) => (store as unknown as Record<string, Record<string, unknown>>)[name]!);
    for (const set of sets) {
      expect(Object.keys(set).length).toBeGreaterThan(5);
      for (const key of Object.keys(set)) expect(Object.getOwnPropertyDescriptor(set, key)?.get, key).toBeTypeOf("function");
    }
    const session = await store.createSession({ id: "s1", agent: "default", mode: "chat" });
    expect(session.id).toBe("s1");
    const used = Object.getOwnPropertyDescriptor(sets[0], "insertSession")!;
    expect(used.get).toBeUndefined();
    expect(used.value).toBeInstanceOf(Object);
    expect(Object.getOwnPropertyDescriptor(sets[0], "listAudit")?.get).toBeTypeOf("function");
    await store.close();
  });

  it("every statement prepares against the migrated schema", async () => {
    const store = openStore();
    let count = 0;
    for (const name of STATEMENT_SETS) {
      const set = (store as unknown as Record<string, Record<string, { run: unknown }>>)[name]!;
      for (const key of Object.keys(set)) {
        expect(set[key]!.run, `${name}.${key}`).toBeTypeOf("function");
        count++;
      }
    }
    expect(count).toBeGreaterThan(60);
    await store.close();
  });

  it("a statement whose SQL is wrong fails when first used, naming the problem", () => {
    const db = new Database(":memory:");
    db.exec("CREATE TABLE t (a INTEGER)");
    const statements = lazyStatements(db, { good: "SELECT a FROM t", bad: "SELECT missing FROM t" });
    expect(statements.good.all()).toEqual([]);
    expect(() => statements.bad).toThrow(/no such column: missing/);
    db.close();
  });
});

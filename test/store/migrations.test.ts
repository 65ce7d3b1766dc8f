import { describe, expect, it } from "vitest";
import { pendingMigrations, runMigrations, type MigrationDialect } from "../../src/store/migrations.js";
import { messageFromRaw, wakeupFromRaw, type RawMessage } from "../../src/store/rows.js";

const steps = [
  { version: 2, name: "second", up: "B" },
  { version: 1, name: "first", up: "A" },
  { version: 3, name: "third", up: "C" },
];

/** A dialect over an in-memory list, synchronous or not. */
function dialect(applied: number[], async: boolean): { dialect: MigrationDialect<string>; ran: string[]; recorded: [number, string, string][] } {
  const ran: string[] = [];
  const recorded: [number, string, string][] = [];
  const wrap = <T>(value: T) => (async ? Promise.resolve(value) : value);
  return {
    ran,
    recorded,
    dialect: {
      applied: () => wrap(applied),
      run: (up) => wrap(void ran.push(up)),
      record: (version, name, at) => wrap(void recorded.push([version, name, at])),
    },
  };
}

describe("the migration runner both drivers share", () => {
  it("applies the steps not yet recorded, in version order, and records each", () => {
    const d = dialect([1], false);
    expect(runMigrations(d.dialect, steps, "T")).toEqual([2, 3]);
    expect(d.ran).toEqual(["B", "C"]);
    expect(d.recorded).toEqual([
      [2, "second", "T"],
      [3, "third", "T"],
    ]);
  });

  it("stays synchronous over a synchronous driver (SQLite) and returns a promise over an asynchronous one (PostgreSQL)", async () => {
    expect(Array.isArray(runMigrations(dialect([], false).dialect, steps, "T"))).toBe(true);
    const d = dialect([], true);
    const pending = runMigrations(d.dialect, steps, "T");
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toEqual([1, 2, 3]);
    expect(d.ran).toEqual(["A", "B", "C"]);
  });

  it("refuses a database a newer build migrated, before running anything", () => {
    expect(() => pendingMigrations([1, 4], steps)).toThrow(/schema version 4 is newer than this build of veil supports \(3\)/);
    const d = dialect([5], false);
    expect(() => runMigrations(d.dialect, steps, "T")).toThrow(expect.objectContaining({ code: "CONFIG_ERROR" }));
    expect(d.ran).toEqual([]);
  });
});

describe("the row converters both drivers share", () => {
  const raw: RawMessage = { id: "m", session_id: "s", seq: 1, role: "user", content: "hi", thinking: null, tool_calls: null, tool_call_id: null, finish_reason: null, token_usage: null, meta: '{"a":1}', kind: null, compacted: 0, created_at: "t" };
  it("read a boolean column as SQLite (0/1) and PostgreSQL (true/false) return it", () => {
    expect(messageFromRaw({ ...raw, compacted: 1 }).compacted).toBe(true);
    expect(messageFromRaw({ ...raw, compacted: 0 }).compacted).toBe(false);
    expect(messageFromRaw({ ...raw, compacted: true }).compacted).toBe(true);
    expect(messageFromRaw({ ...raw, compacted: false }).compacted).toBe(false);
    const wakeup = { session_id: "s", time: "5m", interval_ms: 300000, message: "m", next_fire_at: 1, created_at: "t" };
    expect(wakeupFromRaw({ ...wakeup, loop: true }).loop).toBe(true);
    expect(wakeupFromRaw({ ...wakeup, loop: 0 }).loop).toBe(false);
  });
});

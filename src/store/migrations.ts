import { VeilError } from "../errors.js";

/**
 * One schema step of a driver. Versions are applied in ascending order, each exactly once,
 * and recorded in `schema_migrations`. Never edit a shipped migration: add a new one.
 * `Up` is what the driver runs: SQL text, or (SQLite) a function for steps that need logic.
 */
export interface Migration<Up = string> {
  version: number;
  name: string;
  up: Up;
}

/** The table both drivers record applied steps in (the same DDL runs on SQLite and PostgreSQL). */
export const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at TEXT NOT NULL
)`;

/**
 * What a driver's dialect gives the runner, inside one transaction that holds the database's
 * migration lock (SQLite: an IMMEDIATE transaction; PostgreSQL: a transaction-scoped advisory
 * lock), so several processes opening one database at once apply each step exactly once.
 * SQLite's driver is synchronous and PostgreSQL's is not, so the runner is written once
 * against steps that may or may not be promises (`Maybe`).
 */
export interface MigrationDialect<Up> {
  /** Versions already recorded (the table exists by then). */
  applied(): Maybe<readonly number[]>;
  run(up: Up): Maybe<void>;
  record(version: number, name: string, appliedAt: string): Maybe<void>;
}

type Maybe<T> = T | Promise<T>;

/**
 * The steps still to apply, in order; CONFIG_ERROR when a newer build migrated the database
 * (it records a version this build does not know).
 */
export function pendingMigrations<M extends { version: number }>(applied: readonly number[], migrations: readonly M[]): M[] {
  const ordered = [...migrations].sort((a, b) => a.version - b.version);
  const latestKnown = ordered.at(-1)?.version ?? 0;
  const newest = Math.max(0, ...applied);
  if (newest > latestKnown) {
    throw new VeilError("CONFIG_ERROR", `Database schema version ${newest} is newer than this build of veil supports (${latestKnown}); upgrade veil.`);
  }
  const done = new Set(applied);
  return ordered.filter((m) => !done.has(m.version));
}

/**
 * Applies the pending steps through a dialect (call it inside the driver's locked
 * transaction) and returns the versions applied. With a synchronous dialect it returns the
 * list itself, so SQLite's open stays synchronous; with an asynchronous one, a promise.
 */
export function runMigrations<Up>(dialect: MigrationDialect<Up>, migrations: readonly Migration<Up>[], nowIso: string): Maybe<number[]> {
  return after(dialect.applied(), (applied) => {
    const steps = pendingMigrations(applied, migrations);
    const from = (i: number): Maybe<number[]> => {
      const step = steps[i];
      if (!step) return steps.map((s) => s.version);
      return after(dialect.run(step.up), () => after(dialect.record(step.version, step.name, nowIso), () => from(i + 1)));
    };
    return from(0);
  });
}

/** `next(value)`, at once for a value, after it settles for a promise. */
function after<A, B>(value: Maybe<A>, next: (value: A) => Maybe<B>): Maybe<B> {
  return value instanceof Promise ? value.then(next) : next(value);
}

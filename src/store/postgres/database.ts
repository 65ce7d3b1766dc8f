import type pg from "pg";
import type { Clock } from "../../base/clock.js";
import type { Logger } from "../../base/log.js";
import { checkout, createPool, mapPgError, redactUrl, type PoolOptions, type RetryPolicy } from "./connection.js";
import { SQL, type StatementName } from "./sql.js";

/** What a statement runs on: the pool (one statement, autocommit) or a transaction's client. */
export interface Queryable {
  /** Runs a named statement from sql.ts. */
  run<R extends pg.QueryResultRow = pg.QueryResultRow>(name: StatementName, values: unknown[]): Promise<pg.QueryResult<R>>;
  /** Runs ad-hoc SQL (dynamic updates, admin statements). */
  sql<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  /** Runs `body` in a transaction; inside one already, simply runs it there. */
  transaction<T>(body: (tx: Queryable) => Promise<T>): Promise<T>;
}

/** Deadlock and serialization failures: the transaction did nothing and may simply run again. */
const RETRYABLE_TX = new Set(["40P01", "40001"]);
const TX_ATTEMPTS = 3;

/**
 * The pool plus the two ways to use it: single statements, and transactions that run a
 * function on one connection between BEGIN and COMMIT (ROLLBACK on any throw).
 */
export class Database implements Queryable {
  readonly pool: pg.Pool;
  readonly url: string;
  private readonly retry: RetryPolicy;
  private readonly clock: Clock;
  private readonly log?: Logger;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: PoolOptions & { retry: RetryPolicy; clock: Clock }) {
    this.pool = createPool(options);
    this.url = options.url;
    this.retry = options.retry;
    this.clock = options.clock;
    this.log = options.log;
  }

  /** The URL with the password hidden. */
  get safeUrl(): string {
    return redactUrl(this.url);
  }

  async connect(): Promise<pg.PoolClient> {
    return checkout(this.pool, this.url, this.retry, this.clock, this.log);
  }

  async run<R extends pg.QueryResultRow = pg.QueryResultRow>(name: StatementName, values: unknown[]): Promise<pg.QueryResult<R>> {
    const client = await this.connect();
    try {
      return await client.query<R>({ name, text: SQL[name], values });
    } finally {
      client.release();
    }
  }

  async sql<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    const client = await this.connect();
    try {
      return await client.query<R>(text, values);
    } finally {
      client.release();
    }
  }

  /** Runs `body` in one transaction; retried from the start after a deadlock. */
  async transaction<T>(body: (tx: Queryable) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.connect();
      let broken = false;
      try {
        await client.query("BEGIN");
        const result = await body(clientQueryable(client));
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => (broken = true));
        const code = (error as { code?: string }).code;
        if (!(code && RETRYABLE_TX.has(code)) || attempt >= TX_ATTEMPTS) throw error;
      } finally {
        // A connection that cannot even roll back is dropped, not handed to the next caller.
        client.release(broken);
      }
    }
  }

  /**
   * Runs `body` after every earlier `inOrder` call of this pool has settled: calls start,
   * commit and resolve in call order (the event log needs gseq order = call order = the
   * order a node publishes in, as SQLite gives for free).
   */
  inOrder<T>(body: () => Promise<T>): Promise<T> {
    const result = this.queue.then(body);
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** Maps a driver error for a caller (see mapPgError). */
  fail(error: unknown, what: string, sessionId?: string): unknown {
    return mapPgError(error, this.url, what, sessionId);
  }

  async end(): Promise<void> {
    await this.pool.end();
  }
}

function clientQueryable(client: pg.PoolClient): Queryable {
  const tx: Queryable = {
    run: (name, values) => client.query({ name, text: SQL[name], values }),
    sql: (text, values = []) => client.query(text, values),
    transaction: (body) => body(tx),
  };
  return tx;
}

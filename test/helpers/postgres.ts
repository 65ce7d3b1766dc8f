import { execFile, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { unavailableUnlessCI } from "./requirements.js";

const run = promisify(execFile);

/** Where Debian puts the server binaries; VEIL_PG_BIN points elsewhere. */
const CANDIDATE_BIN_DIRS = [process.env.VEIL_PG_BIN, "/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin"];

/** The folder holding initdb and pg_ctl, or undefined when PostgreSQL is not installed. */
export function postgresBinDir(): string | undefined {
  return CANDIDATE_BIN_DIRS.find((dir): dir is string => !!dir && existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")));
}

/** Why PostgreSQL tests cannot run here, or undefined when they can. */
export function postgresUnavailable(): string | undefined {
  return unavailableUnlessCI(postgresBinDir() ? undefined : `no PostgreSQL server binaries (initdb, pg_ctl) in ${CANDIDATE_BIN_DIRS.filter(Boolean).join(", ")}`);
}

export interface PostgresCluster {
  port: number;
  /** URL of the maintenance database `postgres`. */
  url: string;
  /** URL of a database by name on this cluster. */
  urlFor(database: string): string;
  /** Creates an empty database with a unique name and returns its URL. */
  createDatabase(prefix?: string): Promise<string>;
  /** Stops the server (fast shutdown) and removes its folder. Idempotent. */
  stop(): Promise<void>;
  /** Stops the server without removing data, for "database went down" tests. */
  pause(): Promise<void>;
  /** Starts a paused server again on the same port. */
  resume(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/** initdb and the server refuse to run as root: drop to the `postgres` user when we are root. */
async function asPostgresUser(bin: string, args: string[]): Promise<void> {
  const asRoot = process.getuid?.() === 0;
  const [file, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
  try {
    await run(file, argv, { timeout: 60_000 });
  } catch (error) {
    const e = error as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${[file, ...argv].join(" ")} failed: ${e.message}\n${e.stdout ?? ""}${e.stderr ?? ""}`);
  }
}

/**
 * A throwaway PostgreSQL cluster in a temp folder: trust auth, listening on 127.0.0.1 at a
 * free port with its unix socket inside the folder, fsync off (tests do not survive power
 * loss). One per test file; `createDatabase` gives each test a fresh database.
 */
export async function startPostgres(): Promise<PostgresCluster> {
  const bin = postgresBinDir();
  if (!bin) throw new Error(postgresUnavailable());
  const root = mkdtempSync(join(tmpdir(), "veil-pg-"));
  const data = join(root, "data");
  const socketDir = join(root, "socket");
  mkdirSync(socketDir);
  if (process.getuid?.() === 0) {
    const { uid, gid } = await postgresIds();
    for (const dir of [root, socketDir]) chownSync(dir, uid, gid);
  }
  await asPostgresUser(join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"]);
  const port = await freePort();
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${socketDir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  const start = () => asPostgresUser(join(bin, "pg_ctl"), ["start", "-w", "-t", "60", "-D", data, "-l", join(root, "server.log"), "-o", options]);
  const halt = () => asPostgresUser(join(bin, "pg_ctl"), ["stop", "-w", "-t", "60", "-m", "fast", "-D", data]);
  await start();
  let running = true;
  // A worker that dies before afterAll must not leave a server behind.
  const stopOnExit = () => {
    if (!running) return;
    const args = ["stop", "-m", "immediate", "-D", data];
    if (process.getuid?.() === 0) spawnSync("runuser", ["-u", "postgres", "--", join(bin, "pg_ctl"), ...args]);
    else spawnSync(join(bin, "pg_ctl"), args);
    rmSync(root, { recursive: true, force: true });
  };
  process.once("exit", stopOnExit);
  let removed = false;
  let counter = 0;
  const urlFor = (database: string) => `postgres://postgres:secret-pw@127.0.0.1:${port}/${database}`;
  const cluster: PostgresCluster = {
    port,
    url: urlFor("postgres"),
    urlFor,
    async createDatabase(prefix = "veil_test") {
      const name = `${prefix}_${process.pid}_${++counter}`;
      // WAL_LOG (not FILE_COPY): no checkpoint per CREATE DATABASE.
      await withClient(cluster.url, (client) => client.query(`CREATE DATABASE ${name} STRATEGY = WAL_LOG`));
      return urlFor(name);
    },
    async pause() {
      if (!running) return;
      await halt();
      running = false;
    },
    async resume() {
      if (running) return;
      await start();
      running = true;
    },
    async stop() {
      if (removed) return;
      if (running) await halt().catch(() => undefined);
      running = false;
      removed = true;
      process.off("exit", stopOnExit);
      rmSync(root, { recursive: true, force: true });
    },
  };
  return cluster;
}

async function postgresIds(): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all([run("id", ["-u", "postgres"]), run("id", ["-g", "postgres"])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/**
 * Empties every table of a migrated Veil database but the migration record, and resets
 * the event counter, so one database can serve test after test (CREATE DATABASE costs
 * far more than TRUNCATE).
 */
export async function emptyDatabase(url: string): Promise<void> {
  await withClient(url, async (client) => {
    const { rows } = await client.query<{ tablename: string }>(
      "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT IN ('schema_migrations', 'event_counter', 'audit_counter')",
    );
    if (rows.length) await client.query(`TRUNCATE ${rows.map((r) => `"${r.tablename}"`).join(", ")} RESTART IDENTITY`);
    await client.query("UPDATE event_counter SET last_gseq = 0");
    await client.query("UPDATE audit_counter SET last_seq = 0");
  });
}

/** Runs `body` on a fresh client of `url` (outside any store's pool), then disconnects. */
export async function withClient<T>(url: string, body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end();
  }
}

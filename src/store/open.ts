import type { Clock } from "../base/clock.js";
import type { Logger } from "../base/log.js";
import type { VeilConfig } from "../config/types.js";
import { SqliteStore } from "./sqlite/sqlite-store.js";
import type { Store } from "./store.js";

export interface OpenStoreOptions {
  clock?: Clock;
  log?: Logger;
}

/**
 * The Store the settings name: SQLite at `<workspace>/.veil/veil.db` by
 * default, PostgreSQL for `store.type = "postgres"` (VEIL_DATABASE_URL sets that). The
 * PostgreSQL module, and with it `pg`, is imported only when it is chosen, so embedded
 * users load nothing of it.
 */
export async function openStore(config: VeilConfig, options: OpenStoreOptions = {}): Promise<Store> {
  const settings = config.settings.store;
  if (settings?.type === "postgres") {
    const { PostgresStore } = await import("./postgres/postgres-store.js");
    return PostgresStore.open(settings.url, { clock: options.clock, log: options.log });
  }
  return SqliteStore.open(config.paths.dbPath, { clock: options.clock });
}

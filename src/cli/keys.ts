import { keyView, KeyService, type KeyInput } from "../core/access/keys.js";
import { loadConfig } from "../config/load.js";
import { randomIds } from "../base/ids.js";
import { systemClock } from "../base/clock.js";
import { openStore } from "../store/open.js";
import type { ApiKeyRow, KeyScope } from "../store/store.js";
import type { KeysCommand } from "./args.js";
import type { CliIo } from "./terminal.js";

/**
 * `veil keys create|list|revoke`: works on the workspace's store itself (SQLite file or
 * PostgreSQL), which every server node reads its keys from: a key made here works at once,
 * one revoked here stops working on every node within a second.
 */
export async function keysCommand(command: KeysCommand, io: CliIo): Promise<number> {
  const config = loadConfig({ workspace: command.workspace, env: io.env });
  const store = await openStore(config);
  try {
    const keys = new KeyService({ store, clock: systemClock, ids: randomIds });
    switch (command.action) {
      case "create": {
        const input = command.create!;
        const { row, key } = await keys.create({ ...input, scopes: input.scopes as KeyScope[] } satisfies KeyInput);
        if (command.json) io.stdout(JSON.stringify({ ...keyView(row, 0), key }, null, 2) + "\n");
        else io.stdout(`${key}\n`);
        if (!command.json) io.stderr(`created ${row.id} (${row.name}, ${row.scopes.join(",")}); the key above is shown only now\n`);
        return 0;
      }
      case "list": {
        const listed = await keys.list();
        if (command.json) io.stdout(JSON.stringify(listed.map(({ row, spentUsd }) => keyView(row, spentUsd)), null, 2) + "\n");
        else if (listed.length === 0) io.stdout("no keys\n");
        else for (const { row, spentUsd } of listed) io.stdout(line(row, spentUsd) + "\n");
        return 0;
      }
      case "revoke": {
        const row = await keys.revoke(command.id!);
        if (command.json) io.stdout(JSON.stringify(keyView(row, await keys.spent(row.id)), null, 2) + "\n");
        else io.stdout(`revoked ${row.id} (${row.name}) at ${row.revoked_at}\n`);
        return 0;
      }
    }
  } finally {
    await store.close();
  }
}

function line(row: ApiKeyRow, spentUsd: number): string {
  const limits = [
    row.agents ? `agents=${row.agents.join(",")}` : "",
    row.requests_per_minute !== null ? `rpm=${row.requests_per_minute}` : "",
    row.budget_usd !== null ? `budget=$${row.budget_usd}` : "",
    row.expires_at ? `expires=${row.expires_at}` : "",
  ].filter(Boolean);
  const state = row.revoked_at ? "revoked" : "active";
  return `${row.id}  ${row.name.padEnd(16)} ${row.scopes.join(",").padEnd(16)} ${state.padEnd(8)} spent=$${spentUsd.toFixed(4)}${limits.length ? `  ${limits.join(" ")}` : ""}  ${row.prefix}…`;
}

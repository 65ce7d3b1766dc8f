import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { spawnVeil, veilBuilt, type Spawned } from "../helpers/cli.js";
import { spawnServer, type SpawnedServer } from "../helpers/spawned-server.js";
import { startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let llm: FakeLlm;
let ws: TempWorkspace;
let env: Record<string, string>;
let server: SpawnedServer | undefined;

beforeEach(async () => {
  llm = await startFakeLlm();
  ws = tmpWorkspace();
  mkdirSync(join(ws.root, "home"), { recursive: true });
  env = { ...(process.env as Record<string, string>), VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk", VEIL_MODEL: "fake-model", VEIL_HOME: join(ws.root, "home") };
  delete env.VEIL_SECRET;
  delete env.VEIL_DATABASE_URL;
});
afterEach(async () => {
  await server?.kill();
  server = undefined;
  await llm.close();
  ws.cleanup();
});

const veil = (args: string[]): Promise<Spawned> => spawnVeil(["keys", ...args, "--workspace", ws.root], { cwd: ws.root, env });

describe.skipIf(!veilBuilt)("veil keys (spawned)", () => {
  it("create prints the key once; a running server accepts it at once; list shows no value; revoke stops it", async () => {
    server = await spawnServer(ws.root, { baseUrl: llm.baseUrl });
    const created = await veil(["create", "--name", "laptop", "--scopes", "read,chat", "--agents", "default", "--requests-per-minute", "30", "--budget-usd", "2.5"]);
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^veil_sk_/);
    expect(created.stderr).toMatch(/^created key_\S+ \(laptop, read,chat\); the key above is shown only now$/m);

    const use = (path: string) => fetch(`${server!.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
    expect((await use("/sessions")).status).toBe(200);
    expect((await use("/keys")).status).toBe(403);

    const listed = await veil(["list", "--json"]);
    expect(listed.code).toBe(0);
    const rows = JSON.parse(listed.stdout) as Record<string, unknown>[];
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ name: "laptop", scopes: ["read", "chat"], agents: ["default"], requestsPerMinute: 30, budgetUsd: 2.5, spentUsd: 0, revokedAt: null });
    expect(listed.stdout).not.toContain(key);
    const text = await veil(["list"]);
    expect(text.stdout).toMatch(/laptop\s+read,chat\s+active\s+spent=\$0\.0000\s+agents=default rpm=30 budget=\$2\.5/);

    const revoked = await veil(["revoke", rows[0]!.id as string]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(/^revoked key_\S+ \(laptop\) at \d{4}-/);
    // The server trusts a row it read for a second at most. The bound only ends a failing wait: on a
    // loaded machine the polls themselves can take seconds, so it is not a check of that second.
    const deadline = Date.now() + 20_000;
    let status = 200;
    while (Date.now() < deadline && status !== 401) {
      status = (await use("/sessions")).status;
      if (status !== 401) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(401);
  });

  it("usage mistakes exit 64; an unknown id is KEY_NOT_FOUND, exit 1", async () => {
    for (const args of [["create", "--name", "x"], ["create", "--scopes", "read"], ["revoke"], ["frobnicate"], [], ["create", "--name", "x", "--scopes", "read", "--budget-usd", "lots"]]) {
      const result = await veil(args);
      expect(result.code, args.join(" ")).toBe(64);
      expect(result.stderr).toMatch(/^veil keys/);
    }
    const bad = await veil(["create", "--name", "x", "--scopes", "root"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^VALIDATION_ERROR: scopes/);
    const missing = await veil(["revoke", "key_nope"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe('KEY_NOT_FOUND: no key "key_nope"');
  });
});

import { execFile } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";
import { present } from "../helpers/requirements.js";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const run = promisify(execFile);

let ws: TempWorkspace;
afterEach(() => ws?.cleanup());

function workspaceWith(settings?: Record<string, unknown>): TempWorkspace {
  ws = tmpWorkspace();
  mkdirSync(join(ws.root, "home"), { recursive: true });
  if (settings) ws.write(".veil/settings.json", JSON.stringify(settings));
  return ws;
}
const load = (env: Record<string, string> = {}) => loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home"), ...env } });

describe("store settings", () => {
  it("defaults to SQLite and a 15 s lease", () => {
    workspaceWith();
    const { settings } = load();
    expect(settings.store).toEqual({ type: "sqlite" });
    expect(settings.cluster.leaseSeconds).toBe(15);
  });

  it("reads store and cluster.leaseSeconds from settings.json", () => {
    workspaceWith({ store: { type: "postgres", url: "postgres://u:p@db:5432/veil" }, cluster: { leaseSeconds: 4 } });
    const { settings } = load();
    expect(settings.store).toEqual({ type: "postgres", url: "postgres://u:p@db:5432/veil" });
    expect(settings.cluster.leaseSeconds).toBe(4);
  });

  it("lets VEIL_DATABASE_URL win over settings.store", () => {
    workspaceWith({ store: { type: "sqlite" } });
    expect(load({ VEIL_DATABASE_URL: "postgres://env@h/db" }).settings.store).toEqual({ type: "postgres", url: "postgres://env@h/db" });
    workspaceWith({ store: { type: "postgres", url: "postgres://file@h/db" } });
    expect(load({ VEIL_DATABASE_URL: "postgres://env@h/db" }).settings.store).toEqual({ type: "postgres", url: "postgres://env@h/db" });
  });

  it("refuses postgres without a URL, a non-postgres URL and a bad lease with CONFIG_ERROR", () => {
    for (const bad of [{ store: { type: "postgres" } }, { store: { type: "postgres", url: "mysql://x" } }, { store: { type: "redis" } }, { cluster: { leaseSeconds: 0 } }]) {
      workspaceWith(bad);
      expect(() => load(), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: "CONFIG_ERROR" }));
    }
  });
});

/** Runs a script in a fresh node and returns whether any file of the pg package was loaded. */
async function loadsPg(script: string): Promise<boolean> {
  const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: REPO, timeout: 20_000 });
  return stdout.trim().split("\n").at(-1) === "pg loaded";
}
const PG_LOADED = `
import { createRequire } from "node:module";
const cache = createRequire(import.meta.url).cache;
console.log(Object.keys(cache).some((f) => f.includes("/node_modules/pg/")) ? "pg loaded" : "pg absent");`;

describe.skipIf(!present("the build (dist/src/store/open.js)", existsSync(join(REPO, "dist/src/store/open.js"))))("openStore (built output)", () => {
  it("opens SQLite without loading any of pg", async () => {
    workspaceWith();
    const script = `
      import { loadConfig } from "./dist/src/config/load.js";
      import { openStore } from "./dist/src/store/open.js";
      const config = loadConfig({ workspace: ${JSON.stringify(ws.root)}, env: { VEIL_HOME: ${JSON.stringify(join(ws.root, "home"))} } });
      const store = await openStore(config);
      await store.createSession({ id: "s1", agent: "default", mode: "chat" });
      await store.close();
      ${PG_LOADED}`;
    expect(await loadsPg(script)).toBe(false);
    expect(existsSync(join(ws.root, ".veil/veil.db"))).toBe(true);
  });

  it("detects pg when the PostgreSQL module is imported (the check above can see it)", async () => {
    expect(await loadsPg(`import "./dist/src/store/postgres/postgres-store.js"; ${PG_LOADED}`)).toBe(true);
  });

  it("answers a bad VEIL_DATABASE_URL with CONFIG_ERROR, password hidden", async () => {
    workspaceWith();
    const script = `
      import { loadConfig } from "./dist/src/config/load.js";
      import { openStore } from "./dist/src/store/open.js";
      const config = loadConfig({ workspace: ${JSON.stringify(ws.root)}, env: { VEIL_HOME: "/nonexistent", VEIL_DATABASE_URL: "postgres//me:hunter2@nowhere" } });
      try { await openStore(config); console.log("opened"); } catch (e) { console.log(e.code + " " + e.message); }`;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: REPO, timeout: 20_000 });
    expect(stdout).toMatch(/^CONFIG_ERROR Not a PostgreSQL URL: postgres\/\/me:\*\*\*@nowhere/);
    expect(stdout).not.toContain("hunter2");
  });
});

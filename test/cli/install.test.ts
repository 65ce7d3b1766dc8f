import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { spawnVeil, veilBuilt } from "../helpers/cli.js";

const run = promisify(execFile);
const REPO = fileURLToPath(new URL("../..", import.meta.url));
const PACKAGE = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { name: string; version: string };

interface PackResult {
  filename: string;
  files: { path: string; mode: number }[];
}

/**
 * The install a user does from a clone: `npm pack`, then `npm install -g` of what it made,
 * here into a temp prefix and without the network. The registry is replaced by the clone's
 * own node_modules: only the production dependencies of package-lock.json are linked beside
 * the unpacked package, so an import of a devDependency, or a file missing from `files`,
 * breaks the installed `veil`.
 */
describe.skipIf(!veilBuilt)("install from a clone (npm pack + npm install -g, offline)", () => {
  let root: string;
  let pack: PackResult;
  let prefix: string;
  let llm: FakeLlm;

  beforeAll(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "veil-install-")));
    llm = await startFakeLlm();
    // dist/ is already built (npm test builds first), so prepare need not run again.
    const { stdout } = await run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", root], { cwd: REPO });
    pack = (JSON.parse(stdout) as PackResult[])[0]!;
    const unpacked = join(root, "unpacked");
    mkdirSync(unpacked);
    await run("tar", ["xzf", join(root, pack.filename), "-C", unpacked]);
    linkProductionDependencies(join(unpacked, "package", "node_modules"));
    prefix = join(root, "prefix");
    await run("npm", ["install", "-g", "--prefix", prefix, "--offline", "--ignore-scripts", "--no-audit", "--no-fund", join(unpacked, "package")], { cwd: root });
  }, 60_000);

  afterAll(async () => {
    await llm?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("packs the built sources, README and package.json, with an executable bin", () => {
    const paths = pack.files.map((f) => f.path);
    expect(paths).toContain("dist/src/main.js");
    expect(paths).toContain("dist/src/index.js");
    expect(paths).toContain("dist/src/client/index.js");
    expect(paths).toContain("dist/src/client/index.d.ts");
    expect(paths).toContain("README.md");
    for (const path of paths) expect(path, path).toMatch(/^(dist\/src\/|README\.md$|package\.json$|LICENSE$)/);
    expect(pack.files.find((f) => f.path === "dist/src/main.js")!.mode & 0o111).not.toBe(0);
  });

  it("puts a working `veil` on the prefix's PATH", async () => {
    const veil = join(prefix, "bin", "veil");
    expect(existsSync(veil)).toBe(true);
    const { stdout } = await run(veil, ["--version"]);
    expect(stdout).toBe(`${PACKAGE.version}\n`);
  });

  it("the installed package exports veilcli (openVeil) and veilcli/client (VeilClient)", async () => {
    const script = "const api = await import('veilcli'); const client = await import('veilcli/client'); console.log(typeof api.openVeil, typeof client.VeilClient);";
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: join(prefix, "lib") });
    expect(stdout.trim()).toBe("function function");
  });

  it("the installed veil runs a turn with a tool call against a provider", async () => {
    const ws = realpathSync(mkdtempSync(join(root, "ws-")));
    llm.enqueue(reply().tool("bash", { command: "echo from-the-installed-copy" }).stop(), reply().text("ok").stop());
    const result = await spawnVeil(["run", "say it"], {
      cwd: ws,
      env: { PATH: `${join(prefix, "bin")}:${process.env.PATH}`, HOME: ws, VEIL_HOME: join(ws, "home"), VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk", VEIL_MODEL: "m" },
      bin: join(prefix, "bin", "veil"),
    });
    expect(result.stderr).toContain("from-the-installed-copy");
    expect(result).toMatchObject({ code: 0, stdout: "ok\n" });
  });
});

/** Links each top-level production package of package-lock.json from the clone's node_modules. */
function linkProductionDependencies(target: string): void {
  const lock = JSON.parse(readFileSync(join(REPO, "package-lock.json"), "utf8")) as { packages: Record<string, { dev?: boolean; devOptional?: boolean; optional?: boolean; peer?: boolean }> };
  for (const [path, entry] of Object.entries(lock.packages)) {
    const match = /^node_modules\/((?:@[^/]+\/)?[^/]+)$/.exec(path);
    if (!match || entry.dev || entry.devOptional) continue;
    const source = join(REPO, "node_modules", match[1]!);
    if (!existsSync(source)) continue; // an optional dependency for another platform
    const link = join(target, match[1]!);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(source, link);
  }
}

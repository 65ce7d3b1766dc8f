import { mkdirSync, readdirSync, readFileSync, statSync, truncateSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Script } from "node:vm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { readCodeCache, wrapBundle, writeCodeCache } from "../../src/cli/boot.js";
import { spawnVeil, veilBuilt, VEIL_MAIN } from "../helpers/cli.js";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

const BUNDLE = join(VEIL_MAIN, "..", "cli-bundle", "veil.cjs");

let llm: FakeLlm;
let ws: TempWorkspace;
const home = () => join(ws.root, "home");
const cacheDir = () => join(home(), "cache");

beforeAll(async () => {
  llm = await startFakeLlm();
});
afterAll(async () => {
  await llm.close();
});
beforeEach(() => {
  ws?.cleanup();
  ws = tmpWorkspace();
  mkdirSync(home());
});

async function veilRun(answer: string) {
  llm.enqueue(reply().text(answer).stop());
  const env = { ...process.env, VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk-test", VEIL_MODEL: "fake-model", VEIL_HOME: home() };
  const result = await spawnVeil(["run", "--workspace", ws.root, "hello"], { cwd: ws.root, env });
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  expect(result.stdout).toBe(`${answer}\n`);
}

/** The one cache file a run left, by name. */
function cacheFile(): string {
  const names = readdirSync(cacheDir());
  expect(names).toHaveLength(1);
  expect(names[0]).toMatch(new RegExp(`^cli-[0-9a-f]{16}-${process.version}-${process.arch}\\.v8c$`));
  return join(cacheDir(), names[0]!);
}

/** V8 takes the file's cached data for the bundle the bin runs. */
function acceptedByV8(file: string): boolean {
  const data = readCodeCache(file);
  if (!data) return false;
  return !new Script(wrapBundle(readFileSync(BUNDLE, "utf8")), { filename: BUNDLE, cachedData: data }).cachedDataRejected;
}

describe.skipIf(!veilBuilt)("veil's V8 code cache ($VEIL_HOME/cache)", () => {
  it("a first run writes a cache V8 accepts; the next run reads it and leaves it as it is", async () => {
    await veilRun("first");
    const file = cacheFile();
    expect(acceptedByV8(file)).toBe(true);
    const before = readFileSync(file);
    const mtime = statSync(file).mtimeMs;
    await veilRun("second");
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(statSync(file).mtimeMs).toBe(mtime);
  });

  it.each([
    ["damaged (bytes of the payload flipped)", (file: string) => {
      const bytes = readFileSync(file);
      for (let i = bytes.length >> 1; i < (bytes.length >> 1) + 256; i++) bytes[i]! ^= 0x5a;
      writeFileSync(file, bytes);
    }],
    ["cut short", (file: string) => truncateSync(file, statSync(file).size >> 1)],
    ["not a cache at all", (file: string) => writeFileSync(file, "hello")],
    ["stale (a well-formed cache of other code under this build's name)", (file: string) => {
      const other = new Script(`(function () { return ${JSON.stringify("x".repeat(1000))}; })`).createCachedData();
      writeCodeCache(file, other);
      expect(readCodeCache(file)).toBeDefined();
    }],
  ])("a cache that is %s: the run works as without one, and the cache is written again", async (_what, spoil) => {
    await veilRun("first");
    const file = cacheFile();
    spoil(file);
    expect(acceptedByV8(file)).toBe(false);
    await veilRun("after a bad cache");
    expect(acceptedByV8(cacheFile())).toBe(true);
    await veilRun("with the new cache");
  });

  it("no cache when none can be written (the cache folder is a file): runs work and nothing is left behind", async () => {
    writeFileSync(cacheDir(), "not a folder");
    await veilRun("first");
    await veilRun("second");
    // The checkpoint mirror of the workspace (core/checkpoints) lives in the home too.
    expect(readdirSync(home()).sort()).toEqual(["cache", "checkpoints"]);
    expect(readFileSync(cacheDir(), "utf8")).toBe("not a folder");
  });

  it("another build's cache stays while in use and is removed once a week old, when this build writes its own", async () => {
    mkdirSync(cacheDir());
    const stale = `cli-0000000000000000-${process.version}-${process.arch}.v8c`;
    const recent = `cli-1111111111111111-${process.version}-${process.arch}.v8c`;
    writeFileSync(join(cacheDir(), stale), "an old build's cache");
    const eightDaysAgo = new Date(Date.now() - 8 * 24 * 60 * 60 * 1000);
    utimesSync(join(cacheDir(), stale), eightDaysAgo, eightDaysAgo);
    writeFileSync(join(cacheDir(), recent), "another installed build's cache");
    writeFileSync(join(cacheDir(), "notes.txt"), "not ours");
    await veilRun("first");
    const names = readdirSync(cacheDir());
    expect(names).not.toContain(stale);
    expect(names).toContain(recent);
    expect(names).toContain("notes.txt");
    expect(names.filter((name) => name !== recent && name.endsWith(".v8c"))).toHaveLength(1);
  });
});

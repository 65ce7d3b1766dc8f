import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Script } from "node:vm";

/**
 * Runs the `veil` command's CommonJS bundle (scripts/bundle-cli.mjs) through V8's code cache,
 * so a start-up deserialises the bundle's compiled functions instead of compiling ~600 KB of
 * JavaScript again. Node 20 has no module.enableCompileCache, and an ES module cannot take
 * cached data, hence one CommonJS file compiled as a vm.Script.
 *
 * The cache is `$VEIL_HOME/cache/cli-<bundle id>-<node version>-<arch>.v8c`, written when the
 * process exits after a command that found none (or one V8 turned down), so it holds every
 * function that command compiled; `veil --help` and the like write nothing. A cache file is trusted only when its own SHA-1 matches: V8
 * checks its version, flags and the source's length, not the payload, and deserialising a
 * damaged payload crashes the process. Anything wrong with the cache (missing, damaged, from
 * another build or Node, a folder that cannot be written) means compiling as without one.
 */

/** The bundle's top level: a CommonJS module body plus the two things the bundle asks of its loader. */
type BundleBody = (
  exports: object,
  require: NodeRequire,
  module: { exports: object },
  filename: string,
  dirname: string,
  /** What `import.meta.url` was in the sources (the plugin rewrites it against this). */
  bundleUrl: string,
  /** `import()` of a package: a script compiled by vm has no module loader of its own. */
  importModule: (specifier: string) => Promise<unknown>,
  codeCache: CodeCacheControl,
) => void;

/** What the bundle tells its loader: `keep()` once a command does real work (not for help, version or a usage error). */
export interface CodeCacheControl {
  keep(): void;
}

/** The script V8 compiles (and caches): the bundle as the body of a BundleBody. */
export function wrapBundle(source: string): string {
  return `(function (exports, require, module, __filename, __dirname, __veilBundleUrl, __veilImport, __veilCodeCache) {${source}\n})`;
}
const MAGIC = Buffer.from("veil-v8-cache-1\n");
const DIGEST_BYTES = 20;
const STALE_CACHE_MS = 7 * 24 * 60 * 60 * 1000;

export function runBundle(bundleUrl: URL, bundleId: string, importModule: (specifier: string) => Promise<unknown>): void {
  const file = fileURLToPath(bundleUrl);
  // The build leaves the bundle pure ASCII (scripts/bundle-cli.mjs): latin1 reads it without decoding.
  const source = readFileSync(file, "latin1");
  const cacheFile = codeCachePath(bundleId, process.env);
  const cachedData = cacheFile ? readCodeCache(cacheFile) : undefined;
  const script = new Script(wrapBundle(source), { filename: file, cachedData });
  let wanted = !cachedData || script.cachedDataRejected;
  const codeCache: CodeCacheControl = {
    keep() {
      if (!wanted || cacheFile === undefined) return;
      wanted = false;
      // At exit the cache holds every function this run compiled, not only the top level.
      process.once("exit", () => writeCodeCache(cacheFile, script.createCachedData()));
    },
  };
  const body = script.runInThisContext() as BundleBody;
  const module = { exports: {} };
  body(module.exports, createRequire(file), module, file, dirname(file), bundleUrl.href, importModule, codeCache);
}

/** Where this bundle's cache lives for this Node, or undefined when there is no home to put it in. */
export function codeCachePath(bundleId: string, env: Record<string, string | undefined>): string | undefined {
  try {
    const home = env.VEIL_HOME ? resolve(env.VEIL_HOME) : join(homedir(), ".veil");
    return join(home, "cache", `cli-${bundleId}-${process.version}-${process.arch}.v8c`);
  } catch {
    return undefined;
  }
}

/** The cached data in `file` when its checksum holds, else undefined. */
export function readCodeCache(file: string): Buffer | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch {
    return undefined;
  }
  const payloadStart = MAGIC.length + DIGEST_BYTES;
  if (bytes.length <= payloadStart || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  const payload = bytes.subarray(payloadStart);
  return digest(payload).equals(bytes.subarray(MAGIC.length, payloadStart)) ? payload : undefined;
}

/** Writes the cache whole or not at all (a temp file renamed over), and drops other builds' stale caches. */
export function writeCodeCache(file: string, data: Buffer): void {
  const temp = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(temp, Buffer.concat([MAGIC, digest(data), data]));
    renameSync(temp, file);
    removeOtherCaches(file);
  } catch {
    // No cache this time: the next run compiles and tries again.
    try {
      rmSync(temp, { force: true });
    } catch {
      /* the folder itself is unusable: nothing was left in it */
    }
  }
}

/**
 * Another build's cache goes once it has not been written for STALE_CACHE_MS: two installed
 * versions (or Nodes) in turn keep theirs, an upgrade's leftovers do not stay for ever.
 */
function removeOtherCaches(file: string): void {
  const dir = dirname(file);
  const own = file.slice(dir.length + 1);
  const staleBefore = Date.now() - STALE_CACHE_MS;
  for (const name of readdirSync(dir)) {
    if (name === own || !name.startsWith("cli-") || !name.endsWith(".v8c")) continue;
    const path = join(dir, name);
    if ((statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Infinity) < staleBefore) rmSync(path, { force: true });
  }
}

function digest(data: Buffer): Buffer {
  return createHash("sha1").update(data).digest();
}

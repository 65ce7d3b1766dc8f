// Bundles the `veil` command (src/main.ts and what it loads) into dist/src/cli-bundle/, one
// chunk per command plus shared chunks, and makes dist/src/main.js (the package's bin) load
// it. Loading ~150 small ESM files cost `veil run` most of its start-up; a few chunks cost a
// fraction of that. Packages stay external, resolved from node_modules as before, so native
// and optional ones (better-sqlite3, pg, the MCP and Claude SDKs) load only when used.
// Run by `npm run build` after tsc: the rest of dist/src stays tsc's output, for `veilcli`,
// `veilcli/client`, the tool child process and the glob worker thread.
import { build } from "esbuild";
import { chmodSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));
const src = join(root, "src");
const distSrc = join(root, "dist", "src");
const out = join(distSrc, "cli-bundle");

/**
 * A module that finds files beside itself through import.meta.url (the glob worker, the tool
 * child entry, package.json, the dashboard) keeps finding them from tsc's copy of itself, not
 * from the chunk it was bundled into: its import.meta.url becomes the URL of that copy.
 */
const keepModuleUrls = {
  name: "keep-module-urls",
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      const text = readFileSync(args.path, "utf8");
      if (!text.includes("import.meta.url")) return undefined;
      const compiled = join(distSrc, relative(src, args.path)).replace(/\.ts$/, ".js");
      const fromChunk = relative(out, compiled).split(sep).join("/");
      return { contents: text.replaceAll("import.meta.url", `new URL(${JSON.stringify(fromChunk)}, import.meta.url).href`), loader: "ts" };
    });
  },
};

rmSync(out, { recursive: true, force: true });
await build({
  entryPoints: { main: join(src, "main.ts") },
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  outdir: out,
  chunkNames: "[name]-[hash]",
  // Less to scan at start-up; names are kept so stack traces stay readable.
  minifyWhitespace: true,
  minifySyntax: true,
  plugins: [keepModuleUrls],
  legalComments: "none",
  logLevel: "warning",
});
const bin = join(distSrc, "main.js");
writeFileSync(bin, '#!/usr/bin/env node\n// The `veil` command: src/main.ts, bundled by scripts/bundle-cli.mjs.\nimport "./cli-bundle/main.js";\n');
chmodSync(bin, 0o755);
// tsc's map described the unbundled main.js.
rmSync(`${bin}.map`, { force: true });

// Bundles the dashboard (dashboard/src, no framework) into dist/dashboard: one minified
// script, one stylesheet, the page and its icon. Run by `npm run build` after tsc.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const out = here("../dist/dashboard/");
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [here("src/main.ts")],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2021", "chrome100", "firefox100", "safari15"],
  outfile: `${out}app.js`,
  legalComments: "none",
  logLevel: "warning",
});
for (const file of ["index.html", "favicon.svg"]) copyFileSync(here(file), `${out}${file}`);

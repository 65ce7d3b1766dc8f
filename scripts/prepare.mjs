// npm's `prepare`: builds dist/ unless it already is the build of these sources.
//
// npm runs `prepare` after `npm ci` / `npm install` in the clone, and again each time
// `npx veil` starts in a clone npx has not seen: npx installs the package whose bin it runs
// into its cache (a link back to the clone), and installing a linked folder runs its
// `prepare`. With `prepare` = `npm run build`, the README's first command rebuilt everything
// (~20 s of tsc, with npm hiding its output) before the server said a word. The build
// writes a stamp of its inputs (scripts/build-stamp.mjs); when the sources still match it,
// there is nothing to do.
import { spawnSync } from "node:child_process";
import { builtStamp, ROOT, sourceStamp } from "./build-stamp.mjs";

if (process.env.VEIL_FORCE_BUILD !== "1" && builtStamp() === sourceStamp()) process.exit(0);
const result = spawnSync("npm", ["run", "build"], { cwd: ROOT, stdio: "inherit", shell: process.platform === "win32" });
process.exit(result.status ?? 1);

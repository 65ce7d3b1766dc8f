// Marks the bin entry executable after tsc (tsc does not keep file modes).
import { chmodSync, existsSync } from "node:fs";
const bin = new URL("../dist/src/main.js", import.meta.url);
if (existsSync(bin)) chmodSync(bin, 0o755);

import { describe, expect, it } from "vitest";
import { build } from "esbuild";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const CLIENT_DIR = fileURLToPath(new URL("../../src/client/", import.meta.url));

describe("veilcli/client pulls in no server code", () => {
  it("imports only its own files, and from src/base only types", () => {
    for (const file of readdirSync(CLIENT_DIR).filter((f) => f.endsWith(".ts"))) {
      const source = readFileSync(CLIENT_DIR + file, "utf8");
      for (const match of source.matchAll(/^(import|export)\s+(type\s+)?[^;]*?from\s+"([^"]+)"/gms)) {
        const [, , typeOnly, specifier] = match;
        const ownFile = specifier!.startsWith("./");
        const baseType = specifier!.startsWith("../base/") && (typeOnly !== undefined || /^export type \*/.test(match[0]));
        expect(ownFile || baseType, `${file}: ${match[0].split("\n")[0]}`).toBe(true);
      }
    }
  });

  it("bundles for the browser with nothing but its own modules", async () => {
    const result = await build({ entryPoints: [CLIENT_DIR + "index.ts"], bundle: true, platform: "browser", format: "esm", write: false, metafile: true, logLevel: "silent" });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.length).toBeGreaterThan(0);
    for (const input of inputs) expect(input).toMatch(/^src\/client\//);
    const code = result.outputFiles[0]!.text;
    expect(code).not.toMatch(/node:|require\(/);
    expect(code).toMatch(/VeilClient = class/);
  });
});

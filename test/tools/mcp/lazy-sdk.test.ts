import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { tmpWorkspace, type TempWorkspace } from "../../helpers/workspace.js";
import { TEST_SERVER } from "./helpers.js";

const RUNTIME = pathToFileURL(fileURLToPath(new URL("../../../dist/src/runtime.js", import.meta.url))).href;

let ws: TempWorkspace;
afterEach(() => ws?.cleanup());

/** Runs a runtime start + tool discovery in a child whose module loader records every MCP SDK file it loads. */
function sdkModulesLoaded(settings: Record<string, unknown>): string[] {
  ws = tmpWorkspace({ files: { ".veil/settings.json": JSON.stringify(settings) } });
  const trace = ws.path("loaded.txt");
  const hooks = ws.write("hooks.mjs", `import { appendFileSync } from "node:fs";\nexport async function load(url, context, next) { if (url.includes("@modelcontextprotocol")) appendFileSync(${JSON.stringify(trace)}, url + "\\n"); return next(url, context); }\n`);
  const main = ws.write(
    "main.mjs",
    `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\nconst { createRuntime } = await import(${JSON.stringify(RUNTIME)});\nconst runtime = await createRuntime({ workspace: ${JSON.stringify(ws.root)}, env: { VEIL_HOME: ${JSON.stringify(ws.path("home"))} } });\nconst tools = await runtime.customTools.discover(runtime.agents().default);\nconsole.log(tools.length);\nawait runtime.close();\n`,
  );
  const result = spawnSync(process.execPath, [main], { encoding: "utf8", timeout: 20_000 });
  expect(result.status, result.stderr).toBe(0);
  return existsSync(trace) ? readFileSync(trace, "utf8").trim().split("\n") : [];
}

describe("the MCP SDK is loaded lazily", { timeout: 30_000 }, () => {
  it("is never loaded when no MCP server is configured", () => {
    expect(sdkModulesLoaded({})).toEqual([]);
  });

  it("is loaded once a server is configured and needed", () => {
    const loaded = sdkModulesLoaded({ mcpServers: { t: { command: process.execPath, args: [TEST_SERVER] } } });
    expect(loaded.some((url) => url.includes("/sdk/dist/esm/client/index.js"))).toBe(true);
  });
});

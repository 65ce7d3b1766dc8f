import { existsSync } from "node:fs";
import { join } from "node:path";
import type { BrokenMcpEntry } from "../registry.js";
import type { McpToolSource, McpToolSourceOptions } from "./source.js";

/**
 * The MCP source as the runtime holds it: until a server is configured (in settings
 * or by a `.mcp.json` in the workspace) it loads nothing, so the cold start of a
 * workspace without MCP pays one `existsSync` per discovery and no module loading.
 */
export function createLazyMcpToolSource(options: McpToolSourceOptions): McpToolSource {
  let real: McpToolSource | undefined;
  const configured = () => Object.keys(options.config.settings.mcpServers ?? {}).length > 0 || existsSync(join(options.config.paths.workspace, ".mcp.json"));
  return {
    async discover(agent) {
      if (!real && !configured()) return [];
      real ??= (await import("./source.js")).createMcpToolSource(options);
      return real.discover(agent);
    },
    broken(): BrokenMcpEntry[] {
      return real?.broken() ?? [];
    },
    servers() {
      return real?.servers() ?? [];
    },
  };
}

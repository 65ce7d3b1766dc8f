import type { Clock } from "../../base/clock.js";
import type { VeilConfig } from "../../config/types.js";
import { warnUnknownKeysOnce } from "../../config/unknown-keys.js";
import { childEnv } from "../custom/injected.js";
import { createSchemaChecker } from "../custom/manifest.js";
import type { BrokenMcpEntry, CustomToolSource } from "../registry.js";
import type { Logger, RegisteredTool, ResourceScope } from "../types.js";
import { adaptServerTools, type McpToolProblem } from "./adapter.js";
import { readMcpJson, resolveMcpServers, type McpConfigResult, type McpJsonRead } from "./config.js";
import { McpServerPool } from "./pool.js";
import type { McpServerHandle } from "./server-handle.js";

export interface McpToolSourceOptions {
  config: VeilConfig;
  log: Logger;
  clock: Clock;
  /** Runtime resources: owns the server pool (closed at shutdown). */
  resources: ResourceScope;
  /** Veil's environment; provider keys are removed before a server sees it. */
  env: NodeJS.ProcessEnv;
}

export interface McpToolSource extends CustomToolSource {
  broken(): BrokenMcpEntry[];
  /** The live servers (diagnostics, tests). */
  servers(): McpServerHandle[];
}

const POOL_KEY = "mcp.pool";

/**
 * MCP servers from `settings.mcpServers` and `<workspace>/.mcp.json` as custom
 * tools `mcp__<server>__<tool>`. The SDK is loaded when a server first starts; the
 * runtime holds this source through lazy-source.ts, which loads this module only
 * once a server is configured.
 */
export function createMcpToolSource(options: McpToolSourceOptions): McpToolSource {
  const { config, log, resources } = options;
  const checkSchema = createSchemaChecker();
  const serverEnv = childEnv(options.env, config.settings);
  let mcpJson: McpJsonRead | undefined;
  let resolved: McpConfigResult = { servers: [], problems: [], unknownKeys: [] };
  const onUnknownKey = warnUnknownKeysOnce(log);
  const adapted = new WeakMap<McpServerHandle, { version: number; tools: RegisteredTool[]; problems: McpToolProblem[] }>();

  const resolveConfig = (): McpConfigResult => {
    const read = readMcpJson(config.paths.workspace, mcpJson);
    if (read !== mcpJson || !mcpJson) {
      mcpJson = read;
      resolved = resolveMcpServers({ settingsServers: config.settings.mcpServers, mcpJson: read, workspace: config.paths.workspace, env: options.env });
      for (const problem of resolved.problems) log.warn(problem.reason, { server: problem.server });
      for (const notice of resolved.unknownKeys) onUnknownKey(notice);
    }
    return resolved;
  };
  const pool = () => resources.get(POOL_KEY, () => new McpServerPool({ env: serverEnv, clock: options.clock, log }));
  const toolsOf = (handle: McpServerHandle) => {
    if (!handle.tools) return { tools: [], problems: [] };
    let entry = adapted.get(handle);
    if (!entry || entry.version !== handle.toolsVersion) {
      entry = { version: handle.toolsVersion, ...adaptServerTools(handle, handle.tools, checkSchema, log) };
      for (const problem of entry.problems) log.warn(problem.reason, { server: problem.server });
      adapted.set(handle, entry);
    }
    return entry;
  };

  return {
    async discover() {
      const { servers } = resolveConfig();
      const existing = resources.peek<McpServerPool>(POOL_KEY);
      if (servers.length === 0) {
        existing?.sync([]);
        return [];
      }
      const handles = pool().sync(servers);
      await Promise.all(handles.map((handle) => handle.refreshTools()));
      return handles.flatMap((handle) => toolsOf(handle).tools);
    },
    broken() {
      const out: BrokenMcpEntry[] = resolveConfig().problems.map((p) => ({ scope: "mcp", server: p.server, ...(p.file ? { file: p.file } : {}), reason: p.reason }));
      for (const handle of resources.peek<McpServerPool>(POOL_KEY)?.list() ?? []) {
        const error = handle.lastError;
        if (error) out.push({ scope: "mcp", server: handle.spec.name, reason: `MCP server "${handle.spec.name}": ${error}` });
        for (const problem of toolsOf(handle).problems) out.push({ scope: "mcp", server: problem.server, ...(problem.tool ? { tool: problem.tool } : {}), reason: problem.reason });
      }
      return out;
    },
    servers() {
      return resources.peek<McpServerPool>(POOL_KEY)?.list() ?? [];
    },
  };
}

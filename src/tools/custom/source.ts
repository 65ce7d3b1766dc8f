import { join } from "node:path";
import { touchesFromFields } from "../declared-touches.js";
import type { AgentConfig, VeilConfig } from "../../config/types.js";
import { ToolError } from "../../errors.js";
import { callWithProviderFallback } from "../../llm/provider-api.js";
import type { CustomToolSource } from "../registry.js";
import { compiledEntry } from "../shared/compiled-entry.js";
import type { Logger, RegisteredTool, ResourceScope, ToolContext } from "../types.js";
import { sharedValidators } from "../../base/validation.js";
import { ToolFolderScanner, type BrokenToolFolder, type ToolFolder, type ToolScope } from "./discovery.js";
import { callContext, childEnv, modelInput } from "./injected.js";
import { createSchemaChecker } from "./manifest.js";
import { ChildPool } from "./pool.js";
import type { RpcMethod } from "./protocol.js";
import { isRemoteMethods } from "./remote-methods.js";
import { chooseSandboxAsync, createSandbox } from "../shared/sandbox/session.js";
import { ToolPools } from "./pools.js";

export interface CustomToolSourceOptions {
  config: VeilConfig;
  log: Logger;
  /** Runtime resources: owns the pool of tool processes (disposed at shutdown). */
  resources: ResourceScope;
  /** Heap cap of a tool process in MB. default: 512 */
  maxOldSpaceMb?: number;
  /** Idle tool processes kept ready. default: 1 */
  warmProcesses?: number;
  /** Override of the compiled child entry (tests, packaging). */
  runnerPath?: string;
}

/** The folder source plus what `veil tools` / GET /tools need. */
export interface FolderToolSource extends CustomToolSource {
  /** Folders that could not be loaded in the last scan for this agent, with reasons. */
  broken(agent: AgentConfig): BrokenToolFolder[];
  /** Live tool processes (diagnostics, tests). */
  processIds(): number[];
}

const POOL_KEY = "custom-tools.pool";
/** How long a remote method waits for its result unless the tool says otherwise: 120 s. */
const REMOTE_DEFAULT_TIMEOUT_MS = 120_000;

/**
 * Custom tools from folders (agent > project > global), run in warm child
 * processes. Discovery is re-done per run and costs two stat calls per
 * unchanged folder.
 */
export function createCustomToolSource(options: CustomToolSourceOptions): FolderToolSource {
  const { config, log, resources } = options;
  const checkSchema = createSchemaChecker();
  const pools = (): ToolPools =>
    resources.get(POOL_KEY, () => new ToolPools((settings) => new ChildPool({
      runnerPath: options.runnerPath ?? locateRunner(),
      cwd: config.paths.workspace,
      env: childEnv(process.env, config.settings),
      log,
      maxOldSpaceMb: options.maxOldSpaceMb,
      warm: options.warmProcesses,
      ...settings,
    })));
  /** The context the sandbox of an agent's tool processes is chosen from. */
  const sandboxContext = (agent: AgentConfig) => ({ runtime: resources, settings: config.settings, agent, workspace: config.paths.workspace, paths: config.paths, log });
  /**
   * The pool an agent's calls run in. Unsandboxed, every agent without env of its own
   * shares one; sandboxed, each agent has its own (its policy, env and private folder).
   * sandbox.mode "required" without a working sandbox throws SANDBOX_UNAVAILABLE here.
   */
  const poolFor = async (agent: AgentConfig): Promise<ChildPool> => {
    const context = sandboxContext(agent);
    const choice = await chooseSandboxAsync(context, "custom tool");
    if (choice.sandboxed) {
      return pools().get(JSON.stringify(["sandbox", agent.name, choice.policy, agent.env ?? {}]), async (folder) => ({
        sandbox: await createSandbox(context, choice, await folder(), process.env),
      }));
    }
    if (!agent.env) return pools().get("shared", async () => ({}));
    return pools().get(JSON.stringify(["env", agent.name, agent.env]), async () => ({ env: { ...childEnv(process.env, config.settings), ...agent.env } }));
  };

  const build = (folder: ToolFolder): RegisteredTool => {
    const { manifest } = folder;
    let validator: ((input: unknown) => string | null) | null = null;
    const timeoutMs = Math.round(manifest.timeoutSeconds * 1000);
    const tool: RegisteredTool = {
      name: manifest.name,
      description: manifest.description,
      inputSchema: manifest.inputSchema,
      timeoutMs,
      readOnly: false,
      tier: "custom",
      source: { scope: folder.scope, folder: folder.folder },
      ...(manifest.touches ? { touches: touchesFromFields(manifest.touches) } : {}),
      // Compiled on first use (once): compiling 1000 schemas up front would cost ~1 s per cold start.
      validate(input) {
        if (!validator) {
          try {
            validator = sharedValidators.compile(manifest.inputSchema);
          } catch (error) {
            const message = `custom tool "${manifest.name}" has an input_schema AJV cannot compile (${(error as Error).message}); fix ${join(folder.folder, "tool.json")}`;
            log.warn(message);
            return message;
          }
        }
        return validator(input);
      },
      execute: async (input, ctx) =>
        (await poolFor(ctx.agent)).run({
          toolName: manifest.name,
          file: folder.indexPath,
          version: folder.version,
          input: modelInput(input),
          context: callContext(ctx),
          timeoutMs,
          signal: ctx.signal,
          onChunk: (chunk) => ctx.emitChunk(chunk),
          onRpc: (method, params, push, signal) => serveRpc(method, params, push, ctx, AbortSignal.any([ctx.signal, signal])),
          onBlocked: (host, port) => void ctx.emit({ type: "sandbox.blocked", toolCallId: ctx.toolCallId, host, port }).catch(() => undefined),
        }) as Promise<string>,
    };
    // Schemas with references are compiled now so a dangling $ref shows up at load, not at call.
    if (JSON.stringify(manifest.inputSchema).includes('"$ref"')) validator = sharedValidators.compile(manifest.inputSchema);
    return tool;
  };

  const serveRpc = async (method: RpcMethod, params: Record<string, unknown>, push: (text: string) => void, ctx: ToolContext, signal: AbortSignal): Promise<unknown> => {
    if (method === "remote") {
      const remote = ctx.services.remoteMethods;
      if (!isRemoteMethods(remote)) {
        throw new ToolError("TOOL_CONTEXT_INVALID", "_remoteMethodExecution is not available: this runtime has no remote-method service (start the server with `veil serve`)");
      }
      if (typeof params.method !== "string" || params.method === "") throw new ToolError("VALIDATION_ERROR", "_remoteMethodExecution needs { method: string, data?, timeoutMs? }");
      const timeoutMs = typeof params.timeoutMs === "number" && params.timeoutMs > 0 ? params.timeoutMs : REMOTE_DEFAULT_TIMEOUT_MS;
      return remote.execute({ sessionId: ctx.sessionId, method: params.method, data: params.data, timeoutMs, signal });
    }
    const result = await callWithProviderFallback({
      settings: ctx.settings,
      modelId: typeof params.modelId === "string" ? params.modelId : ctx.modelKey,
      messages: Array.isArray(params.messages) ? params.messages : [],
      reasoning: (params.reasoning as never) ?? undefined,
      tools: Array.isArray(params.tools) ? params.tools : undefined,
      maxTokens: typeof params.maxTokens === "number" ? params.maxTokens : undefined,
      temperature: typeof params.temperature === "number" ? params.temperature : undefined,
      onChunk: params.stream ? push : undefined,
      signal,
      env: config.env,
      models: config.models,
      log,
    });
    return result;
  };

  const scanner = new ToolFolderScanner<RegisteredTool>({ log, checkSchema, build });
  const lastBroken = new Map<string, BrokenToolFolder[]>();

  const roots = (agent: AgentConfig): Array<{ scope: ToolScope; dir: string }> => {
    const list: Array<{ scope: ToolScope; dir: string }> = [];
    if (agent.agentFolder) list.push({ scope: "agent", dir: join(agent.agentFolder, "tools") });
    list.push({ scope: "project", dir: join(config.paths.projectDir, "tools") });
    list.push({ scope: "global", dir: join(config.paths.homeDir, "tools") });
    return list;
  };

  return {
    async discover(agent) {
      const { tools, broken } = scanner.scan(roots(agent));
      lastBroken.set(agent.name, broken);
      if (tools.size > 0) {
        try {
          (await poolFor(agent)).prewarm();
        } catch (error) {
          log.warn("custom tools cannot run", { error: (error as Error).message });
        }
      }
      return [...tools.values()].map((entry) => entry.value);
    },
    broken(agent) {
      return lastBroken.get(agent.name) ?? scanner.scan(roots(agent)).broken;
    },
    processIds() {
      return resources.peek<ToolPools>(POOL_KEY)?.pids() ?? [];
    },
  };
}

/**
 * The compiled child entry. From dist (…/dist/src/tools/custom/source.js) it is the
 * sibling child-main.js; from the TypeScript sources (tests) it is the built copy in dist/.
 */
export function locateRunner(from: string = import.meta.url): string {
  return compiledEntry(from, "child-main.js");
}

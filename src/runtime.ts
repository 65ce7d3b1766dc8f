import { mkdirSync } from "node:fs";
import { trackerStateDir, WorkspaceTracker } from "./core/checkpoints/workspace-tracker.js";
import type { AgentConfig, Settings, VeilConfig } from "./config/types.js";
import { settingsHooksReader } from "./config/hooks-file.js";
import { agentsStamp, loadAgents, loadConfig } from "./config/load.js";
import { warnUnknownKeysOnce, type UnknownKeyListener } from "./config/unknown-keys.js";
import { systemClock, type Clock } from "./base/clock.js";
import type { EventBus } from "./base/events.js";
import { randomIds, type IdGenerator } from "./base/ids.js";
import { createLogger, type Logger } from "./base/log.js";
import { KeyService } from "./core/access/keys.js";
import { SessionOwners } from "./core/access/owners.js";
import { MULTI_AGENT_SERVICE, MultiAgentService } from "./core/agents/service.js";
import { allBuiltinTools } from "./core/builtins.js";
import { ClusterNode, newNodeId } from "./core/cluster/node.js";
import { ClusterRemoteMethods } from "./core/cluster/remote-methods.js";
import { DeltaRelayBus } from "./core/cluster/delta-relay.js";
import { FencedEventWriter } from "./core/cluster/fenced-events.js";
import { RunFences } from "./core/cluster/fencing.js";
import { singleNodePlacement, type SessionPlacement } from "./core/placement.js";
import { EventLog } from "./core/event-log.js";
import { RunWriters } from "./core/run-writers.js";
import { InProcessEventBus } from "./core/memory-bus.js";
import { RemoteMethodService } from "./core/remote-methods.js";
import { Resources } from "./core/resources.js";
import { HookRunner } from "./core/hooks.js";
import { SessionManager } from "./core/session-manager.js";
import { SessionSweeper } from "./core/session-cleanup.js";
import { StreamTokens } from "./core/stream-tokens.js";
import { WakeupService } from "./core/wakeups.js";
import { ScheduleService, SCHEDULES_SERVICE } from "./core/schedules/service.js";
import { InboundWebhooks } from "./core/webhooks/inbound.js";
import { OutboundWebhooks } from "./core/webhooks/outbound.js";
import { createClaudeCliEngine } from "./engines/claude-cli/index.js";
import { createNativeEngine } from "./engines/native/loop.js";
import type { Engine, RunResult } from "./engines/types.js";
import { createLlmClient } from "./llm/fallback.js";
import { clientForRecordings } from "./llm/recordings/clients.js";
import { loadTelemetry } from "./core/telemetry/load.js";
import type { VeilMetrics } from "./core/telemetry/metrics.js";
import { reportingFailures } from "./core/telemetry/model-calls.js";
import type { Telemetry } from "./core/telemetry/types.js";
import type { LlmClient } from "./llm/types.js";
import type { Store } from "./store/store.js";
import { openStore } from "./store/open.js";
import { isClusterStore } from "./store/cluster.js";
import { combineToolSources, type CustomToolSource } from "./tools/registry.js";
import { extensionOf, SelfAddress, type ToolServices } from "./tools/services.js";
import type { RegisteredTool } from "./tools/types.js";
import { createCustomToolSource } from "./tools/custom/source.js";
import { createLazyMcpToolSource } from "./tools/mcp/lazy-source.js";
import { createSkillSource, type SkillSource } from "./tools/skills/source.js";
import { createProjectInstructions } from "./core/instructions/project.js";

/**
 * `serve` runs the whole service: at start it recovers cut runs, re-arms every stored
 * wake-up and resumes queued messages. `oneshot` (`veil run`) serves one session of its
 * own and touches no other session's timers, inbox or replies.
 */
export type RuntimeMode = "serve" | "oneshot";

export interface RuntimeOptions {
  workspace: string;
  mode?: RuntimeMode;
  /** serve mode: run start() inside createRuntime (default true). */
  start?: boolean;
  env?: Record<string, string | undefined>;
  /** CLI flags: the top layer of the settings merge. */
  overrides?: Partial<Settings>;
  /** A config already loaded (skips loadConfig). */
  config?: VeilConfig;
  clock?: Clock;
  ids?: IdGenerator;
  log?: Logger;
  store?: Store;
  bus?: EventBus;
  llm?: LlmClient;
  engines?: readonly Engine[];
  customTools?: CustomToolSource;
  skills?: SkillSource;
  builtins?: RegisteredTool[];
  /** Re-read agent folders per session (default true) so new agents need no restart. */
  reloadAgents?: boolean;
  /** Knobs for tools (shell isolation and environment, the rg binary), for tests and embedders. */
  toolServices?: Pick<ToolServices, "shell" | "ripgrepPath">;
}

export interface Runtime {
  mode: RuntimeMode;
  config: VeilConfig;
  store: Store;
  bus: EventBus;
  events: EventLog;
  llm: LlmClient;
  clock: Clock;
  ids: IdGenerator;
  log: Logger;
  builtins: readonly RegisteredTool[];
  customTools: CustomToolSource;
  /** Skills of an agent (SKILL.md folders), re-read on change. */
  skills: SkillSource;
  sessions: SessionManager;
  resources: Resources;
  wakeups: WakeupService;
  remoteMethods: RemoteMethodService;
  streamTokens: StreamTokens;
  /** API keys (hash lookups with a one-second cache, spend, request windows). */
  keys: KeyService;
  /** Which key owns each session (for ownership checks and the SSE fan-out). */
  owners: SessionOwners;
  multiAgent: MultiAgentService;
  /** Lifecycle hooks (PreToolUse… ); `veil mcp` runs its calls through them too. */
  hooks: HookRunner;
  /** serve: closes one-shot sessions idle past limits.idleSessionTtl (at start, then every minute); null for oneshot. */
  sweeper: SessionSweeper | null;
  /** Prompts that start on their own (POST /schedules); they fire only in a serving runtime. */
  schedules: ScheduleService;
  /** settings.webhooks: signed requests that start sessions, and events POSTed elsewhere (serving runtime). */
  webhooks: { inbound: InboundWebhooks; outbound: OutboundWebhooks };
  /** What tools reach through ctx.services (built whole before the first run). */
  services: ToolServices;
  /** The server's address, set once it listens (web_fetch refuses it). */
  selfAddress: SelfAddress;
  /** Metrics and traces of the runs (null: none configured). */
  telemetry: Telemetry | null;
  /** What GET /metrics serves (a serving runtime's; null in one-shot mode). */
  metrics: VeilMetrics | null;
  /** The agents known now; naming one not among them re-reads the agent folders at once. */
  agents(wanted?: string): Record<string, AgentConfig>;
  /** Background work of a serving runtime, in the order it must happen (idempotent). */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** The composition root: wires config, store, events, LLM, engines, tools, sessions and features. */
export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  const env = options.env ?? process.env;
  const mode = options.mode ?? "serve";
  const log = options.log ?? createLogger({ level: (env.VEIL_LOG_LEVEL as "info" | undefined) ?? "info" });
  // One listener for the runtime's life: a key is reported once, however often agents are re-read.
  const onUnknownKey = warnUnknownKeysOnce(log);
  const config = options.config ?? loadConfig({ workspace: options.workspace, env, overrides: options.overrides, onUnknownKey });
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? randomIds;
  mkdirSync(config.paths.projectDir, { recursive: true });
  const store = options.store ?? (await openStore(config, { log }));
  // Several serve nodes on one PostgreSQL: leases decide which node runs a session.
  const clusterStore = mode === "serve" && isClusterStore(store) ? store : null;
  const nodeId = clusterStore ? newNodeId() : null;
  const localBus = options.bus ?? new InProcessEventBus({ onHandlerError: (error) => log.warn("event handler failed", { error: String(error) }) });
  // A cluster node's bus also carries its live deltas to the other nodes (and theirs to it).
  const deltas = clusterStore && nodeId ? new DeltaRelayBus(localBus, { store: clusterStore, nodeId, log }) : null;
  const bus: EventBus = deltas ?? localBus;
  // A cluster node's runs write through fences of their leases, their events too.
  const fences = clusterStore ? new RunFences({ store: clusterStore, log }) : null;
  const eventWriter = fences ? new FencedEventWriter(fences) : null;
  const events = new EventLog({ store, bus, clock, log, ...(eventWriter ? { append: eventWriter.append } : {}) });
  // What is published for a session from outside its run goes through the run's writer while it runs.
  const runWriters = new RunWriters(events);
  // VEIL_RECORD records the model's answers; VEIL_REPLAY answers from a recording instead of any provider.
  const recorded = clientForRecordings(() => options.llm ?? createLlmClient({ settings: config.settings, models: config.models, env: config.env, clock, log }), {
    env,
    workspace: config.paths.workspace,
    clock,
    log,
  });
  // Metrics for a server (GET /metrics), traces where a collector is configured; else nothing loads.
  const { telemetry, metrics } = await loadTelemetry({
    env,
    settings: config.settings.telemetry,
    metrics: mode === "serve" ? { liveSessions: () => sessions.liveCount, monotonic: () => clock.monotonic() } : null,
    log,
  });
  const llm = telemetry?.modelCallFailed ? reportingFailures(recorded, (code) => telemetry.modelCallFailed!(code)) : recorded;
  const claudeCli = createClaudeCliEngine({ config, clock });
  const engines = options.engines ?? [claudeCli, createNativeEngine({ llm })];
  const builtins = options.builtins ?? allBuiltinTools();
  const resources = new Resources();
  const customTools =
    options.customTools ?? combineToolSources([createCustomToolSource({ config, log, resources }), createLazyMcpToolSource({ config, log, clock, resources, env: process.env })]);
  const agents = agentReader(config, clock, log, options.reloadAgents !== false, onUnknownKey);
  const skills = options.skills ?? createSkillSource({ paths: config.paths, log });
  const instructions = createProjectInstructions(config.paths);
  // Hooks are guardrails: a hook added to (or removed from) settings.json applies from the next call on, no restart.
  const hooks = new HookRunner({ hooks: config.settings.hooks, reload: settingsHooksReader(config.paths, config.settings.hooks), workspace: config.paths.workspace, clock, log, emit: (sessionId, event) => runWriters.publish(sessionId, event), env: process.env });
  const selfAddress = new SelfAddress();

  const wakeups = resources.get("wakeups", () =>
    new WakeupService({
      store,
      clock,
      log,
      minLoopSeconds: () => config.settings.wakeup?.minLoopSeconds ?? 10,
      ...(clusterStore && nodeId ? { claim: (sessionId: string, dueAt: number) => clusterStore.claimWakeup(sessionId, dueAt, nodeId) } : {}),
      deliver: async (sessionId, message) => {
        await sessions.send(sessionId, message, { meta: { source: "wakeup" } });
      },
    }),
  );
  // Several nodes: pending methods are rows every node lists and answers.
  const clusterMethods = clusterStore && nodeId ? resources.get("remoteMethods", () => new ClusterRemoteMethods({ events: runWriters, clock, store: clusterStore, nodeId, log })) : null;
  const remoteMethods: RemoteMethodService = clusterMethods ?? resources.get("remoteMethods", () => new RemoteMethodService({ events: runWriters, clock }));
  const toolServices = (sessions: SessionManager): ToolServices => {
    const multiAgent = resources.get("multiAgent", () => {
      const service = new MultiAgentService({ sessions, store, llm, clock, ids, log, settings: config.settings, agents, ...(clusterStore ? { ranElsewhere: (result: RunResult) => cluster?.ranElsewhere(result) ?? false } : {}) });
      // Several nodes: the node that runs a target answers its async messages, whoever sent them.
      if (clusterStore) service.delivery.adoptForeignMessages();
      return service;
    });
    return { llm, wakeups, remoteMethods, selfAddress, ...options.toolServices, extensions: new Map([[MULTI_AGENT_SERVICE, multiAgent]]) };
  };
  const keys = new KeyService({ store, clock, ids });
  const owners = new SessionOwners(store);
  const keyBudgetSpent = async (ownerKey: string) => {
    const principal = await keys.principalOf(ownerKey);
    return principal ? keys.overBudget(principal) : false;
  };
  // What each turn changes in the workspace, seen by one tracker per runtime (sub-agents share the workspace); none when checkpoints are off.
  const checkpoints = config.settings.checkpoints.enabled ? new WorkspaceTracker(config.paths.workspace, trackerStateDir(config.paths.homeDir, config.paths.workspace), [config.paths.homeDir]) : undefined;
  // The node places its sessions: the session manager reaches it, so it reaches the manager once that exists.
  const cluster: ClusterNode | null =
    clusterStore && nodeId && fences && eventWriter
      ? new ClusterNode({ store: clusterStore, sessions: (): SessionManager => sessions, events, fences, eventWriter, log, leaseSeconds: config.settings.cluster.leaseSeconds, nodeId, ...(clusterMethods ? { remoteMethods: clusterMethods } : {}), ...(deltas ? { deltas } : {}) })
      : null;
  const placement: SessionPlacement = cluster ?? singleNodePlacement(store);
  const sessions: SessionManager = new SessionManager({ config, store, events, clock, ids, log, builtins, customTools, skills, instructions, runtimeResources: resources, services: toolServices, agents, engines, llm, hooks, telemetry, placement, ...(checkpoints ? { checkpoints } : {}), keyBudgetSpent, runWriters });
  const services = sessions.services;
  const multiAgent = extensionOf(services, MULTI_AGENT_SERVICE)!;

  sessions.onClose((id) => wakeups.closed(id));
  // A dead node's schedules move with its sessions.
  cluster?.onTakeOver((id) => wakeups.adopt(id));
  sessions.onResume((id) => wakeups.resumed(id));
  sessions.onClose((id) => void remoteMethods.cancelSession(id));
  const streamTokens = new StreamTokens(clock);
  // Sub-agents live no longer than their parent: closing a session closes its descendants.
  sessions.onClose(async (parentId) => {
    for (const child of await store.listSessions({ parentSessionId: parentId })) if (child.status !== "closed") await sessions.close(child.id);
  });
  const sweeper = mode === "serve" ? new SessionSweeper({ store, sessions, clock, log, settings: config.settings }) : null;
  const schedules = resources.get(SCHEDULES_SERVICE, () =>
    new ScheduleService({ store, clock, log, ids, sessions, agents, nodeId: cluster?.nodeId ?? ids.next("node"), singleNode: !cluster, maxConcurrentRuns: config.settings.schedules.maxConcurrentRuns }),
  );
  const webhookSettings = config.settings.webhooks;
  const inbound = new InboundWebhooks({ store, clock, ids, log, sessions, hooks: webhookSettings.in, env: config.env });
  const outbound = resources.get("outboundWebhooks", () => new OutboundWebhooks({ store, clock, log, bus, hooks: webhookSettings.out, env: config.env }));

  let started: Promise<void> | null = null;
  const runtime: Runtime = {
    mode,
    config,
    store,
    bus,
    events,
    llm,
    clock,
    ids,
    log,
    builtins,
    customTools,
    skills,
    sessions,
    resources,
    wakeups,
    remoteMethods,
    streamTokens,
    keys,
    owners,
    multiAgent,
    hooks,
    sweeper,
    schedules,
    webhooks: { inbound, outbound },
    services,
    selfAddress,
    telemetry,
    metrics,
    agents,
    start() {
      if (mode === "oneshot") return Promise.resolve();
      started ??= (async () => {
        // 0. Cluster: listen for signals and hold leases before recovering anything.
        await cluster?.start();
        // 1. Waiting async callers are re-attached before any run can answer them (several
        //    nodes: adopted when drained instead, on whichever node runs the target).
        if (!cluster) await multiAgent.delivery.recover();
        // 2. Cut runs get placeholders for their open tool calls; their sessions go idle.
        await sessions.recoverRuns();
        // 3. Stored wake-ups and schedules are re-armed (an overdue one fires once, into a
        //    valid history); deliveries an earlier run left are sent.
        await wakeups.start();
        await schedules.start();
        outbound.start();
        // 4. Messages still in an inbox start their runs.
        await sessions.resumeInboxes();
        // 5. One-shot sessions idle past limits.idleSessionTtl are closed, now and every minute.
        await sweeper?.start();
      })();
      return started;
    },
    async close() {
      await sweeper?.stop();
      // A due time that fired now would be taken, then cut: it is left to the next start.
      schedules.stop();
      await sessions.shutdown();
      checkpoints?.close();
      await cluster?.close();
      // Runs end their claude processes; this catches any a crashed run left.
      await claudeCli.shutdown();
      await events.flush();
      await deltas?.flush();
      // The last turns' spans go out before the process ends.
      await telemetry?.close();
      await resources.dispose();
      await store.close();
    },
  };
  if (mode === "serve" && options.start !== false) await runtime.start();
  return runtime;
}

/** How long a look at the agent folders stands: edits to known agents are seen within this, ms. */
export const AGENTS_RECHECK_MS = 1000;

/**
 * Agents, re-read when an agent file changed, so sessions see edits and new agents without a
 * restart. The folders are looked at (a stat per agent file) at most once per
 * AGENTS_RECHECK_MS, since a burst of sessions would otherwise stat every folder for each;
 * asking for an agent the last look did not find looks again at once, so a new agent is seen
 * by the very next session.
 */
function agentReader(config: VeilConfig, clock: Clock, log: Logger, reload: boolean, onUnknownKey: UnknownKeyListener): (wanted?: string) => Record<string, AgentConfig> {
  let cached = config.agents;
  let stamp = agentsStamp(config.paths);
  let lookedAt = clock.monotonic();
  return (wanted) => {
    if (!reload) return cached;
    const missing = wanted !== undefined && !Object.hasOwn(cached, wanted);
    if (!missing && clock.monotonic() - lookedAt < AGENTS_RECHECK_MS) return cached;
    try {
      lookedAt = clock.monotonic();
      const now = agentsStamp(config.paths);
      if (now !== stamp) {
        cached = loadAgents(config.paths, onUnknownKey);
        stamp = now;
      }
    } catch (error) {
      log.warn("agent folders could not be re-read; keeping the last good set", { error: String(error) });
    }
    return cached;
  };
}

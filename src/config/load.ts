import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { VeilError } from "../errors.js";
import { sharedValidators } from "../base/validation.js";
import { ownEntry, withoutPrototypes } from "./dictionary.js";
import { builtinDefaultAgent, defaultMode, defaultSettings } from "./defaults.js";
import { AgentFileSchema, ModelsFileSchema, SettingsFileSchema } from "./schemas.js";
import { didYouMean, findUnknownKeys, type UnknownKeyListener } from "./unknown-keys.js";
import type { AgentConfig, ModeConfig, ModelEntry, Settings, VeilConfig, VeilPaths } from "./types.js";

export interface LoadOptions {
  workspace: string;
  env: Record<string, string | undefined>;
  /** CLI flags: the top layer of the settings merge. */
  overrides?: Partial<Settings>;
  /** Told of each key a file holds that Veil does not know (the file still loads). */
  onUnknownKey?: UnknownKeyListener;
}

/** A config file's schema and its validator, compiled on first use: a workspace without config files never pays for it. */
export interface FileSchema {
  schema: object;
  validate(input: unknown): string | null;
}
export function configFileSchema(schema: object): FileSchema {
  let compiled: ((input: unknown) => string | null) | undefined;
  return { schema, validate: (input) => (compiled ??= sharedValidators.compile(schema as Record<string, unknown>))(input) };
}
const settingsFile = configFileSchema(SettingsFileSchema);
const modelsFile = configFileSchema(ModelsFileSchema);
const agentFile = configFileSchema(AgentFileSchema);

export function resolvePaths(workspace: string, env: Record<string, string | undefined>): VeilPaths {
  const root = existsSync(workspace) ? realpathSync(workspace) : resolve(workspace);
  const projectDir = join(root, ".veil");
  return {
    workspace: root,
    projectDir,
    homeDir: env.VEIL_HOME ? resolve(env.VEIL_HOME) : join(homedir(), ".veil"),
    dbPath: join(projectDir, "veil.db"),
    secretPath: join(projectDir, "secret"),
    memoryDir: join(projectDir, "memory"),
  };
}

/**
 * Loads the configuration once. Merge order: built-in defaults < $VEIL_HOME <
 * <workspace>/.veil < environment shortcuts < CLI overrides.
 */
export function loadConfig(options: LoadOptions): VeilConfig {
  const paths = resolvePaths(options.workspace, options.env);
  let settings = defaultSettings() as unknown as Record<string, unknown>;
  for (const dir of [paths.homeDir, paths.projectDir]) {
    const file = join(dir, "settings.json");
    const data = readJsonFile(file, settingsFile, options.onUnknownKey);
    if (data) settings = mergeDeep(settings, data);
  }
  settings = mergeDeep(settings, envShortcuts(options.env));
  if (options.overrides) settings = mergeDeep(settings, options.overrides as Record<string, unknown>);
  const finalSettings = settings as unknown as Settings;
  checkProviders(finalSettings);
  checkStore(finalSettings);

  // Kept as written: the catalogue and the defaults fill the rest when a model is looked up.
  const models: Record<string, ModelEntry> = {};
  for (const dir of [paths.homeDir, paths.projectDir]) {
    const data = readJsonFile(join(dir, "models.json"), modelsFile, options.onUnknownKey) as Record<string, ModelEntry> | undefined;
    for (const [key, entry] of Object.entries(data ?? {})) models[key] = { ...ownEntry(models, key), ...entry };
  }

  return deepFreeze(withoutPrototypes({ paths, settings: finalSettings, models, agents: loadAgents(paths, options.onUnknownKey), env: { ...options.env } }));
}

/** Agents: built-in default < $VEIL_HOME/agents < <workspace>/.veil/agents, by name. */
export function loadAgents(paths: VeilPaths, onUnknownKey?: UnknownKeyListener): Record<string, AgentConfig> {
  const agents: Record<string, AgentConfig> = { default: builtinDefaultAgent() };
  for (const [dir, source] of [
    [join(paths.homeDir, "agents"), "global"],
    [join(paths.projectDir, "agents"), "project"],
  ] as const) {
    if (!isDir(dir)) continue;
    for (const entry of readdirSync(dir).sort()) {
      const folder = join(dir, entry);
      const file = join(folder, "agent.json");
      if (!existsSync(file)) continue;
      const agent = readAgent(folder, file, entry, source, onUnknownKey);
      agents[agent.name] = agent;
    }
  }
  return withoutPrototypes(agents);
}

/**
 * A cheap stamp of the agent folders (names, sizes and mtimes of agent.json and
 * AGENT.md): when it is unchanged, a reload would read the same agents.
 */
export function agentsStamp(paths: VeilPaths): string {
  const parts: string[] = [];
  for (const dir of [join(paths.homeDir, "agents"), join(paths.projectDir, "agents")]) {
    if (!isDir(dir)) continue;
    for (const entry of readdirSync(dir).sort()) {
      for (const file of ["agent.json", "AGENT.md"]) {
        try {
          const info = statSync(join(dir, entry, file));
          parts.push(`${dir}/${entry}/${file}:${info.size}:${info.mtimeMs}`);
        } catch {
          // absent file: part of the stamp by omission
        }
      }
    }
  }
  return parts.join("|");
}

function readAgent(folder: string, file: string, folderName: string, source: "global" | "project", onUnknownKey: UnknownKeyListener | undefined): AgentConfig {
  const raw = readJsonFile(file, agentFile, onUnknownKey) as Record<string, unknown>;
  const promptFile = join(folder, "AGENT.md");
  const systemPrompt = existsSync(promptFile) ? readFileSync(promptFile, "utf8") : ((raw.systemPrompt as string | undefined) ?? "");
  const modesRaw = (raw.modes as Record<string, Partial<ModeConfig>> | undefined) ?? { chat: {} };
  const modes: Record<string, ModeConfig> = {};
  for (const [mode, value] of Object.entries(modesRaw)) modes[mode] = { ...defaultMode(), ...value };
  return {
    name: (raw.name as string | undefined) ?? folderName,
    description: (raw.description as string | undefined) ?? "",
    model: raw.model as string | undefined,
    systemPrompt,
    reasoning: raw.reasoning as AgentConfig["reasoning"],
    ...(raw.compaction ? { compaction: raw.compaction as AgentConfig["compaction"] } : {}),
    budget: (raw.budget as AgentConfig["budget"]) ?? {},
    modes,
    ...(raw.instructions === false ? { instructions: false } : {}),
    ...(raw.sandbox ? { sandbox: raw.sandbox as AgentConfig["sandbox"] } : {}),
    ...(raw.approval ? { approval: raw.approval as AgentConfig["approval"] } : {}),
    ...(raw.env ? { env: raw.env as AgentConfig["env"] } : {}),
    ...(raw.checkpoints ? { checkpoints: raw.checkpoints as AgentConfig["checkpoints"] } : {}),
    agentFolder: folder,
    source,
  };
}

function envShortcuts(env: Record<string, string | undefined>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (env.VEIL_BASE_URL) {
    out.providers = { env: { type: "openai", baseUrl: env.VEIL_BASE_URL, apiKeyEnv: "VEIL_API_KEY" } };
    out.defaultProvider = "env";
  }
  if (env.VEIL_MODEL) out.defaultModel = env.VEIL_MODEL;
  if (env.VEIL_DATABASE_URL) out.store = { type: "postgres", url: env.VEIL_DATABASE_URL };
  return out;
}

function checkProviders(settings: Settings): void {
  if (settings.defaultProvider && !ownEntry(settings.providers, settings.defaultProvider)) {
    throw new VeilError("CONFIG_ERROR", `settings.json: defaultProvider "${settings.defaultProvider}" names no entry in "providers"`);
  }
}

function checkStore(settings: Settings): void {
  if (settings.store.type === "postgres" && !settings.store.url) {
    throw new VeilError("CONFIG_ERROR", `settings.json: store.type "postgres" needs store.url (or set VEIL_DATABASE_URL)`);
  }
}

/**
 * Parses and validates one config file. A key the schema does not know fails the load where
 * the schema refuses extra keys (the error says which known key is closest); anywhere else
 * it goes to `onUnknownKey` and the file loads.
 */
export function readJsonFile(file: string, spec: FileSchema, onUnknownKey: UnknownKeyListener | undefined): Record<string, unknown> | undefined {
  if (!existsSync(file)) return undefined;
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new VeilError("CONFIG_ERROR", `${file}: invalid JSON (${(error as Error).message})`, { cause: error });
  }
  const unknown = findUnknownKeys(data, spec.schema);
  const problem = spec.validate(data);
  if (problem) {
    const hints = unknown.filter((key) => key.refused).map((key) => ` Unknown key "${key.path}"${didYouMean(key)}.`);
    throw new VeilError("CONFIG_ERROR", `${file}: ${problem.replace(/ Rewrite the input.*$/, "")}${hints.join("")}`);
  }
  for (const key of unknown) onUnknownKey?.({ file, ...key });
  return data as Record<string, unknown>;
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Objects merge key by key; arrays and scalars replace. */
export function mergeDeep(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (key === "__proto__" || key === "constructor" || key === "prototype") continue;
    const prev = out[key];
    out[key] = isPlainObject(prev) && isPlainObject(value) ? mergeDeep(prev, value) : value;
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as Record<string, unknown>)) deepFreeze(child);
  }
  return value;
}

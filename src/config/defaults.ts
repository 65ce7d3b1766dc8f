import type { AgentConfig, CompactionSettings, ModeConfig, ModelInfo, ProviderConfig, SandboxSettings, Settings } from "./types.js";

export const DEFAULT_WEB_SEARCH_ENDPOINT = "https://html.duckduckgo.com/html/";

/** Built-in defaults: the bottom layer of the settings merge. */
export function defaultSettings(): Settings {
  return {
    providers: {},
    fallbackModels: [],
    budget: { max_iterations: 50 },
    files: { writeRoots: [] },
    webFetch: { allowHosts: [] },
    webSearch: { endpoint: DEFAULT_WEB_SEARCH_ENDPOINT },
    retry: { maxRetries: 2, baseDelayMs: 500, maxDelayMs: 30_000 },
    limits: { maxLiveSessions: 200, maxBodyBytes: 10 * 1024 * 1024, idleSessionTtl: "24h" },
    wakeup: { minLoopSeconds: 10 },
    defaultCompaction: defaultCompaction(),
    store: { type: "sqlite" },
    cluster: { leaseSeconds: 15 },
    sandbox: defaultSandbox(),
    approval: { tools: [], timeoutSeconds: 300 },
    schedules: { maxConcurrentRuns: 64 },
    webhooks: { in: {}, out: [] },
    checkpoints: { enabled: true },
  };
}

/**
 * Sandboxed when the machine can; the host's network; the usual credential stores of the
 * server user's home hidden; only the variables a shell needs to find programs and speak
 * the user's locale passed through.
 */
export function defaultSandbox(): SandboxSettings {
  return {
    mode: "auto",
    network: "full",
    allowHosts: [],
    readDeny: [
      "~/.ssh",
      "~/.aws",
      "~/.gnupg",
      "~/.azure",
      "~/.kube",
      "~/.docker",
      "~/.config/gcloud",
      "~/.config/gh",
      "~/.netrc",
      "~/.npmrc",
      "~/.pypirc",
      "~/.git-credentials",
    ],
    envPass: ["PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME"],
  };
}

/** Compact at 80 % of the window, keep the newest 20,000 tokens whole. */
export function defaultCompaction(): CompactionSettings {
  return { autoThreshold: 0.8, keepRecentTokens: 20_000 };
}

/** A provider's time to the first byte of its answer: a slow local model's prefill can take minutes. */
export const DEFAULT_FIRST_BYTE_TIMEOUT_MS = 600_000;
/** A provider's longest silence between chunks once its answer streams. */
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;

export interface ProviderTimeouts {
  firstByteMs: number;
  idleMs: number;
}

/** Each phase's setting, else the provider's older single `timeoutMs`, else the default. */
export function providerTimeouts(config: Pick<ProviderConfig, "timeoutMs" | "firstByteTimeoutMs" | "idleTimeoutMs">): ProviderTimeouts {
  return {
    firstByteMs: config.firstByteTimeoutMs ?? config.timeoutMs ?? DEFAULT_FIRST_BYTE_TIMEOUT_MS,
    idleMs: config.idleTimeoutMs ?? config.timeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
  };
}

export const DEFAULT_CONTEXT_WINDOW = 128_000;

/** A model with no catalogue entry: text-only, default window. */
export function defaultModelInfo(): ModelInfo {
  return { input_modalities: ["text"], context_window: DEFAULT_CONTEXT_WINDOW };
}

export function defaultMode(): ModeConfig {
  return { enabled: true, tools: [], disallowedTools: [], preActivatedTools: [] };
}

export const DEFAULT_SYSTEM_PROMPT =
  "You are Veil, a capable assistant working in the user's workspace. Use the tools available to you to inspect and change files, run commands and research. Be concise and report what you did.";

/** The agent every workspace has unless a project or global agent named "default" overrides it. */
export function builtinDefaultAgent(): AgentConfig {
  return {
    name: "default",
    description: "General-purpose agent with every built-in tool.",
    systemPrompt: DEFAULT_SYSTEM_PROMPT,
    budget: {},
    modes: { chat: defaultMode() },
    agentFolder: null,
    source: "builtin",
  };
}

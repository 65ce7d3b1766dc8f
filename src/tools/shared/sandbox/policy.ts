import type { AgentConfig, SandboxMode, SandboxNetwork, SandboxSettings, Settings } from "../../../config/types.js";

/**
 * The sandbox one agent's processes get: the settings, narrowed by the agent's own
 * `sandbox` block. An agent can only make it stricter, never looser:
 * - `mode`: off < auto < required (the stricter of the two wins);
 * - `network`: full > allowlist > none (the narrower wins);
 * - `allowHosts`: the hosts both allow (under "full" a side allows every host);
 * - `readDeny`: both lists (union);
 * - `envPass`: the variables both pass (intersection).
 */
export function effectiveSandbox(settings: SandboxSettings, agent?: Partial<SandboxSettings>): SandboxSettings {
  if (!agent) return settings;
  const network = narrowerNetwork(settings.network, agent.network ?? settings.network);
  const agentHosts = agent.network === undefined || agent.network === "full" ? (agent.allowHosts ?? null) : (agent.allowHosts ?? []);
  return {
    mode: stricterMode(settings.mode, agent.mode ?? settings.mode),
    network,
    allowHosts: network === "allowlist" ? intersectHosts(settings.network === "full" ? null : settings.allowHosts, agentHosts) : [],
    readDeny: [...new Set([...settings.readDeny, ...(agent.readDeny ?? [])])],
    envPass: agent.envPass ? settings.envPass.filter((name) => agent.envPass!.includes(name)) : settings.envPass,
  };
}

/** The sandbox of an agent's processes under these settings. */
export function agentSandbox(settings: Pick<Settings, "sandbox">, agent: Pick<AgentConfig, "sandbox">): SandboxSettings {
  return effectiveSandbox(settings.sandbox, agent.sandbox);
}

const MODE_STRICTNESS: Record<SandboxMode, number> = { off: 0, auto: 1, required: 2 };
const NETWORK_WIDTH: Record<SandboxNetwork, number> = { none: 0, allowlist: 1, full: 2 };

function stricterMode(a: SandboxMode, b: SandboxMode): SandboxMode {
  return MODE_STRICTNESS[b] > MODE_STRICTNESS[a] ? b : a;
}

function narrowerNetwork(a: SandboxNetwork, b: SandboxNetwork): SandboxNetwork {
  return NETWORK_WIDTH[b] < NETWORK_WIDTH[a] ? b : a;
}

/**
 * Patterns allowing exactly the hosts both sides allow; null stands for "every host".
 * A pair keeps the narrower pattern when one contains the other; two patterns that merely
 * overlap cannot (two different exact names, two unrelated suffixes), so they allow nothing.
 */
function intersectHosts(a: readonly string[] | null, b: readonly string[] | null): string[] {
  if (a === null) return [...(b ?? [])];
  if (b === null) return [...a];
  const out = new Set<string>();
  for (const left of a) {
    for (const right of b) {
      if (patternWithin(left, right)) out.add(normaliseHost(left));
      else if (patternWithin(right, left)) out.add(normaliseHost(right));
    }
  }
  return [...out];
}

/** Every host `inner` allows, `outer` allows too. */
function patternWithin(inner: string, outer: string): boolean {
  const i = normaliseHost(inner);
  const o = normaliseHost(outer);
  if (i.startsWith("*.")) return o.startsWith("*.") && i.slice(1).endsWith(o.slice(1));
  return hostAllowed(i, [o]);
}

function normaliseHost(host: string): string {
  return host.trim().toLowerCase().replace(/\.$/, "");
}

/**
 * An allowlist entry matches a host: an exact name (case-insensitive, a trailing dot
 * ignored), or `*.example.com`, which matches every name below example.com (not
 * example.com itself). IP addresses match only when listed as they are written.
 */
export function hostAllowed(host: string, allowHosts: readonly string[]): boolean {
  const name = normaliseHost(host.replace(/^\[(.*)\]$/, "$1"));
  return allowHosts.some((entry) => {
    const pattern = normaliseHost(entry.replace(/^\[(.*)\]$/, "$1"));
    return pattern.startsWith("*.") ? name.endsWith(pattern.slice(1)) && name.length > pattern.length - 1 : name === pattern;
  });
}

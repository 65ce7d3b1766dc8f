import type { Settings } from "../../../config/types.js";

/** Never passed into a sandbox, whatever envPass says: the server's own secrets. */
const RUNTIME_SECRETS = ["VEIL_SECRET", "VEIL_API_KEY", "VEIL_DATABASE_URL"];

/** Where the sandbox's HTTP clients find Veil's allowlist proxy (inside the sandbox's own network). */
export const PROXY_PORT = 3128;
export const PROXY_URL = `http://127.0.0.1:${PROXY_PORT}`;

export interface SandboxEnvOptions {
  /** The environment the server would have given the process. */
  base: Record<string, string | undefined>;
  envPass: readonly string[];
  /** agent.json "env". */
  agentEnv?: Readonly<Record<string, string>>;
  /** The names of the variables holding provider keys (settings' apiKeyEnv). */
  secretNames: readonly string[];
  home: string;
  /** Set the proxy variables (network "allowlist"). */
  proxy: boolean;
}

/** The variables that name provider keys in these settings. */
export function providerKeyNames(settings: Pick<Settings, "providers" | "claudeCli">): string[] {
  const names = Object.values(settings.providers ?? {}).flatMap((provider) => (provider.apiKeyEnv ? [provider.apiKeyEnv] : []));
  if (settings.claudeCli?.apiKeyEnv) names.push(settings.claudeCli.apiKeyEnv);
  return names;
}

/**
 * A sandboxed process's whole environment: the envPass variables the server has, the
 * agent's own, and what Veil sets ($HOME, the proxy). A runtime secret or provider key
 * never gets in through envPass.
 */
export function sandboxEnv(options: SandboxEnvOptions): Record<string, string> {
  const withheld = new Set([...RUNTIME_SECRETS, ...options.secretNames]);
  const env: Record<string, string> = {};
  for (const name of options.envPass) {
    const value = options.base[name];
    if (value !== undefined && !withheld.has(name)) env[name] = value;
  }
  Object.assign(env, options.agentEnv ?? {});
  env.HOME = options.home;
  if (options.proxy) {
    for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"]) env[name] = PROXY_URL;
  }
  return env;
}

import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultSandbox } from "../../src/config/defaults.js";
import type { AgentConfig, SandboxSettings, Settings, VeilConfig } from "../../src/config/types.js";
import type { ToolContext } from "../../src/tools/types.js";
import { detectSandbox, type SandboxSupport } from "../../src/tools/shared/sandbox/probe.js";
import { unavailableUnlessCI } from "./requirements.js";
import { createToolHarness, type ToolHarness } from "./tool-context.js";

/**
 * Why the real sandbox cannot be tested here (undefined: it can): no bwrap, or a kernel or
 * container that refuses it namespaces. Such a machine skips the sandbox tests; in CI
 * (CI=true, where `.ci/run` installs bubblewrap) the test file fails at once, saying why.
 */
export function sandboxUnavailable(support: SandboxSupport = detectSandbox()): string | undefined {
  if (support.available) return undefined;
  const refused = /namespace/i.test(support.reason)
    ? " (this kernel or container does not let bwrap create user namespaces: allow them, e.g. sysctl kernel.unprivileged_userns_clone=1 or kernel.apparmor_restrict_unprivileged_userns=0, or run the container with user namespaces enabled)"
    : "";
  return unavailableUnlessCI(`the sandbox tests need a working bubblewrap, and ${support.reason}${refused}`);
}

/** Values that must never be seen inside a sandbox. */
export const SECRETS = {
  file: "secret-file-7f3a",
  settings: "settings-marker-91c2",
  keys: "keys-marker-5d0e",
  veilHome: "veil-home-marker-2b8f",
  denied: "denied-marker-c41d",
  provider: "sk-provider-key-66aa",
  veilSecret: "veil-secret-env-0b1c",
  database: "postgres://u:db-password-e5f9@h/db",
  unlisted: "unlisted-value-3a7e",
} as const;

export interface SandboxHarness extends ToolHarness {
  /** Host paths around the workspace: outside (read-only in the sandbox), a writeRoot, a denied folder, $VEIL_HOME. */
  dirs: { outside: string; writeRoot: string; denied: string; veilHome: string; home: string };
  /** A call context with this harness's paths (its own $VEIL_HOME outside the workspace); `config` has them too. */
  ctx(overrides?: Partial<ToolContext>): ToolContext;
}

/**
 * A tool harness with everything a sandbox must hide: the runtime's secrets in `.veil`,
 * a $VEIL_HOME and a readDeny folder outside the workspace, provider keys and runtime
 * secrets in the shells' base environment, an agent with its own env.
 */
export async function sandboxHarness(options: { sandbox?: Partial<SandboxSettings>; settings?: Partial<Settings>; agent?: Partial<AgentConfig> } = {}): Promise<SandboxHarness> {
  const scratch = realpathSync(mkdtempSync(join(tmpdir(), "veil-sbx-test-")));
  // The host's /tmp is not visible in the sandbox (its /tmp is private): "outside" lives elsewhere.
  const outside = realpathSync(mkdtempSync(join("/var/tmp", "veil-sbx-outside-")));
  const dirs = { outside, writeRoot: join(scratch, "extra"), denied: join(scratch, "denied"), veilHome: join(scratch, "veil-home"), home: join(scratch, "home") };
  for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true });
  writeFileSync(join(dirs.outside, "readable.txt"), "outside-readable");
  writeFileSync(join(dirs.denied, "denied.txt"), SECRETS.denied);
  writeFileSync(join(dirs.veilHome, "settings.json"), JSON.stringify({ marker: SECRETS.veilHome }));
  const sandbox: SandboxSettings = { ...defaultSandbox(), readDeny: [...defaultSandbox().readDeny, dirs.denied], envPass: [...defaultSandbox().envPass, "OPENAI_API_KEY", "VEIL_SECRET"], ...options.sandbox };
  const harness = await createToolHarness({
    files: {
      ".veil/secret": SECRETS.file,
      ".veil/settings.json": JSON.stringify({ marker: SECRETS.settings }),
      ".veil/keys.json": SECRETS.keys,
      "src/app.txt": "app",
    },
    settings: {
      sandbox,
      files: { writeRoots: [dirs.writeRoot] },
      providers: { live: { type: "openai", baseUrl: "https://api.example.com/v1", apiKeyEnv: "OPENAI_API_KEY" } },
      ...options.settings,
    },
    agent: { env: { AGENT_VAR: "from-agent" }, ...options.agent },
    services: {
      shell: {
        env: {
          ...process.env,
          HOME: dirs.home,
          OPENAI_API_KEY: SECRETS.provider,
          VEIL_SECRET: SECRETS.veilSecret,
          VEIL_DATABASE_URL: SECRETS.database,
          UNLISTED: SECRETS.unlisted,
        },
      },
    },
  });
  const config: VeilConfig = { ...harness.config, paths: { ...harness.config.paths, homeDir: dirs.veilHome } };
  const ctx = (overrides: Partial<ToolContext> = {}) => harness.context({ paths: config.paths, ...overrides });
  const close = harness.close.bind(harness);
  const call = harness.call.bind(harness);
  return Object.assign(harness, {
    dirs,
    ctx,
    config,
    call: (tool: Parameters<ToolHarness["call"]>[0], input: Record<string, unknown>, overrides?: Partial<ToolContext>) => call(tool, input, { paths: config.paths, ...overrides }),
    close: async () => {
      await close();
      rmSync(scratch, { recursive: true, force: true });
      rmSync(outside, { recursive: true, force: true });
    },
  });
}

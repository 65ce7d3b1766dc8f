import { join, resolve } from "node:path";
import type { SandboxSettings } from "../../../config/types.js";
import { ToolError } from "../../../errors.js";
import type { ToolContext } from "../../types.js";
import { providerKeyNames } from "./environment.js";
import { agentSandbox } from "./policy.js";
import { SANDBOX_SUPPORT_KEY, SandboxProbe, type SandboxSupport } from "./probe.js";
import { Sandbox } from "./sandbox.js";

type SandboxContext = Pick<ToolContext, "runtime" | "settings" | "agent" | "workspace" | "paths" | "log">;

/** What a session's processes get: the agent's policy, what the machine can do, and the verdict. */
export interface SandboxChoice {
  policy: SandboxSettings;
  support: SandboxSupport;
  /** The processes run in a sandbox. */
  sandboxed: boolean;
}

/** `$VEIL_HOME/sandbox-home`: copied into every sandbox's private $HOME when it is made (its `.bashrc` is the shells' rc). */
export const HOME_SEED_DIR = "sandbox-home";

export function sandboxProbe(ctx: Pick<ToolContext, "runtime">): SandboxProbe {
  return ctx.runtime.get(SANDBOX_SUPPORT_KEY, () => new SandboxProbe());
}

/** What GET /health reports: the configured mode, whether processes run sandboxed, and by what. */
export interface SandboxStatus {
  mode: SandboxSettings["mode"];
  active: boolean;
  backend: "bubblewrap" | null;
}

/**
 * The server-wide status (settings' mode; an agent may only make it stricter). The first
 * call probes the machine without blocking the event loop (later ones wait for that probe),
 * and a runtime whose sandbox.mode is "auto" and which cannot make a sandbox logs its one
 * warning then.
 */
export async function sandboxStatus(ctx: Pick<ToolContext, "runtime" | "settings" | "log">): Promise<SandboxStatus> {
  const mode = ctx.settings.sandbox.mode;
  if (mode === "off") return { mode, active: false, backend: null };
  const support = await sandboxProbe(ctx).warm();
  if (!support.available && mode === "auto") warnUnsandboxed(ctx, support.reason);
  return { mode, active: support.available, backend: support.backend };
}

function warnUnsandboxed(ctx: Pick<ToolContext, "runtime" | "log">, reason: string): void {
  sandboxProbe(ctx).warnOnce(() => ctx.log.warn(`sandbox.mode is "auto" but ${reason}: bash and custom tools run without a sandbox`));
}

/**
 * The verdict for this context's agent. "required" without a working sandbox throws
 * SANDBOX_UNAVAILABLE (the caller runs nothing); "auto" without one logs a warning once
 * per runtime and runs unsandboxed.
 */
export function chooseSandbox(ctx: SandboxContext, what: string): SandboxChoice {
  const policy = agentSandbox(ctx.settings, ctx.agent);
  if (policy.mode === "off") return { policy, support: { available: false, backend: null, reason: "sandbox.mode is off" }, sandboxed: false };
  const probe = sandboxProbe(ctx);
  const support = probe.get();
  if (support.available) return { policy, support, sandboxed: true };
  if (policy.mode === "required") {
    throw new ToolError("SANDBOX_UNAVAILABLE", `sandbox.mode is "required" and ${support.reason}; the ${what} did not run`);
  }
  warnUnsandboxed(ctx, support.reason);
  return { policy, support, sandboxed: false };
}

/** chooseSandbox() after the probe ran without blocking the event loop. */
export async function chooseSandboxAsync(ctx: SandboxContext, what: string): Promise<SandboxChoice> {
  if (agentSandbox(ctx.settings, ctx.agent).mode !== "off") await sandboxProbe(ctx).warm();
  return chooseSandbox(ctx, what);
}

/**
 * The sandbox of this context's agent, its private folder at `privateRoot`.
 * `envBase` is the environment the process would have had outside.
 */
export function createSandbox(ctx: SandboxContext, choice: SandboxChoice, privateRoot: string, envBase: Record<string, string | undefined>): Promise<Sandbox> {
  if (!choice.support.available) throw new Error("no sandbox support");
  const { paths } = ctx;
  return Sandbox.create({
    support: choice.support,
    policy: choice.policy,
    workspace: ctx.workspace,
    writeRoots: (ctx.settings.files?.writeRoots ?? []).map((root) => resolve(ctx.workspace, root)),
    projectDir: paths.projectDir,
    veilHome: paths.homeDir,
    privateRoot,
    homeSeed: join(paths.homeDir, HOME_SEED_DIR),
    envBase,
    agentEnv: ctx.agent.env,
    secretNames: providerKeyNames(ctx.settings),
  });
}

/** The environment of an unsandboxed process: the server's (or the embedder's), with the agent's own variables over it. */
export function unsandboxedEnv(base: Record<string, string | undefined> | undefined, agentEnv: Readonly<Record<string, string>> | undefined): Record<string, string | undefined> | undefined {
  if (!agentEnv) return base;
  return { ...(base ?? process.env), ...agentEnv };
}

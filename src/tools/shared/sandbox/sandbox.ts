import { chmod, cp, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxSettings } from "../../../config/types.js";
import { compiledEntry } from "../compiled-entry.js";
import { PROXY_PORT, sandboxEnv } from "./environment.js";
import { mountArgs, type PrivateDirPaths } from "./mounts.js";
import type { SandboxSupport } from "./probe.js";
import { listenProxy, type ProxyListener } from "./proxy.js";

export interface SandboxSpec {
  support: Extract<SandboxSupport, { available: true }>;
  policy: SandboxSettings;
  workspace: string;
  writeRoots: readonly string[];
  projectDir: string;
  veilHome: string;
  /** A folder of the host that becomes the sandbox's private part (made if missing). */
  privateRoot: string;
  /** Copied into the private $HOME when it is made (`$VEIL_HOME/sandbox-home`), if it exists. */
  homeSeed?: string;
  /** The environment the process would get outside. */
  envBase: Record<string, string | undefined>;
  agentEnv?: Readonly<Record<string, string>>;
  secretNames: readonly string[];
}

/** The name sandboxed processes see the forwarder script by (it runs from the read-only install). */
export const FORWARDER_ENTRY = "forwarder-main.js";

/**
 * One sandbox's recipe: bubblewrap's argv (namespaces, the mounts of mounts.ts), the
 * environment, and (network "allowlist") a proxy listener per process. Processes that
 * share it share its private folder: one $HOME and /tmp.
 */
export class Sandbox {
  private constructor(
    readonly spec: SandboxSpec,
    readonly privateDir: PrivateDirPaths,
    private readonly args: readonly string[],
  ) {}

  /** Makes the private folder (tmp, home, the empty file hidden files are replaced by). */
  static async create(spec: SandboxSpec): Promise<Sandbox> {
    const root = spec.privateRoot;
    const privateDir: PrivateDirPaths = { root, tmp: join(root, "tmp"), home: join(root, "home"), empty: join(root, "empty") };
    // Side by side: a shell waits for its folder before it starts.
    const seedHome = async () => {
      await mkdir(privateDir.home, { recursive: true, mode: 0o700 });
      if (spec.homeSeed) await cp(spec.homeSeed, privateDir.home, { recursive: true, force: false, errorOnExist: false }).catch(() => undefined);
    };
    const makeEmpty = async () => {
      await mkdir(root, { recursive: true, mode: 0o700 });
      await writeFile(privateDir.empty, "");
      await chmod(privateDir.empty, 0o444);
    };
    await Promise.all([mkdir(privateDir.tmp, { recursive: true, mode: 0o700 }), seedHome(), makeEmpty()]);
    const mounts = mountArgs({
      workspace: spec.workspace,
      writeRoots: spec.writeRoots,
      projectDir: spec.projectDir,
      veilHome: spec.veilHome,
      readDeny: spec.policy.readDeny,
      network: spec.policy.network,
      privateDir,
    });
    return new Sandbox(spec, privateDir, [spec.support.bwrap, ...spec.support.flags, ...mounts, "--"]);
  }

  get network(): SandboxSettings["network"] {
    return this.spec.policy.network;
  }

  /** bubblewrap and its arguments, up to the command. */
  argv(): string[] {
    return [...this.args];
  }

  /** The process's whole environment. */
  env(): Record<string, string> {
    return sandboxEnv({
      base: this.spec.envBase,
      envPass: this.spec.policy.envPass,
      agentEnv: this.spec.agentEnv,
      secretNames: this.spec.secretNames,
      home: this.privateDir.home,
      proxy: this.network === "allowlist",
    });
  }

  /**
   * A proxy listener for one process (network "allowlist"), on a socket in the private
   * folder: the process's forwarder connects to it.
   */
  openProxy(name: string, onBlocked: (host: string, port: number) => void): Promise<ProxyListener> {
    return listenProxy(this.proxySocketPath(name), { allowHosts: this.spec.policy.allowHosts, onBlocked });
  }

  /** Where openProxy(name) listens. */
  proxySocketPath(name: string): string {
    return join(this.privateDir.root, `proxy-${name}.sock`);
  }

  /** The command that runs a forwarder for `socketPath` inside the sandbox. */
  forwarderCommand(socketPath: string): string[] {
    return [process.execPath, compiledEntry(import.meta.url, FORWARDER_ENTRY), socketPath, String(PROXY_PORT)];
  }
}

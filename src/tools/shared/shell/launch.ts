import type { Sandbox } from "../sandbox/sandbox.js";

/** How one shell process is started: what comes before `bash …`, its environment, and what to release when it ends. */
export interface ShellLaunch {
  prefix: readonly string[];
  env: Record<string, string | undefined>;
  /** The process talks to the network through a forwarder (it does not count as a daemon of the shell). */
  forwarder: boolean;
  close(): Promise<void>;
}

/** Variable naming the forwarder's PID to the shell's first script (it unsets it). */
export const FORWARDER_VARIABLE = "__VEIL_FORWARDER";

/**
 * Runs in the sandbox before the shell when its network is the allowlist proxy: starts the
 * forwarder (arguments 1–4), waits for its ready line, then becomes the shell (the rest).
 * A forwarder that cannot start ends the process with its message on stderr.
 */
const FORWARDER_WRAPPER = [
  'exec 9< <(exec "$1" "$2" "$3" "$4")',
  "IFS= read -r -u 9 __veil_line || exit 125",
  "exec 9<&-",
  "shift 4",
  `${FORWARDER_VARIABLE}=$! exec "$@"`,
].join("\n");

/**
 * The launch of one shell inside `sandbox`: bubblewrap's argv, the sandbox's environment,
 * and for the allowlist network its own proxy listener (so a refused request names the
 * shell's call) with the forwarder in front of bash.
 */
export async function sandboxedLaunch(sandbox: Sandbox, name: string, onBlocked: (host: string, port: number) => void): Promise<ShellLaunch> {
  const env = sandbox.env();
  if (sandbox.network !== "allowlist") return { prefix: sandbox.argv(), env, forwarder: false, close: async () => {} };
  const proxy = await sandbox.openProxy(name, onBlocked);
  const wrapper = ["bash", "--noprofile", "--norc", "-c", FORWARDER_WRAPPER, "veil-sandbox", ...sandbox.forwarderCommand(proxy.socketPath)];
  return { prefix: [...sandbox.argv(), ...wrapper], env, forwarder: true, close: () => proxy.close() };
}

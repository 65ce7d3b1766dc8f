import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chmodSync, mkdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { spawnVeil, veilBuilt, type Spawned } from "../helpers/cli.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

/** The uid of `nobody`, an ordinary user a root test run can become. */
const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;
/** Below this port, binding needs privileges (Linux: net.ipv4.ip_unprivileged_port_start). */
const unprivilegedFrom = (() => {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_unprivileged_port_start", "utf8").trim());
  } catch {
    return 1024;
  }
})();
const PRIVILEGED_PORT = 80;
const canMeetEacces = unprivilegedFrom > PRIVILEGED_PORT;

let ws: TempWorkspace;
let env: Record<string, string | undefined>;
let occupier: Server | undefined;

beforeEach(() => {
  ws = tmpWorkspace();
  mkdirSync(join(ws.root, "home"), { recursive: true });
  env = { ...process.env, VEIL_HOME: join(ws.root, "home"), VEIL_MODEL: undefined, VEIL_BASE_URL: undefined, VEIL_SECRET: undefined, VEIL_LOG_LEVEL: undefined };
});
afterEach(async () => {
  await new Promise<void>((resolve) => (occupier ? occupier.close(() => resolve()) : resolve()));
  occupier = undefined;
  ws.cleanup();
});

/** Runs `veil serve ARGS`; should it ever start listening, it is stopped (and the test fails on the exit code). */
function serve(args: string[], options: { uid?: number; gid?: number } = {}): Promise<Spawned> {
  return spawnVeil(["serve", "--secret", "s3cret", ...args], {
    cwd: ws.root,
    env,
    ...options,
    onStdout: (text, kill) => {
      if (text.includes("listening on")) kill();
    },
  });
}

/** The one line a bind failure prints: `CODE: message`, no stack trace. */
function onlyLine(result: Spawned): string {
  const lines = result.stderr.split("\n").filter(Boolean);
  expect(lines, result.stderr).toHaveLength(1);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  return lines[0]!;
}

describe.skipIf(!veilBuilt)("veil serve: an address it cannot bind", () => {
  it("a port in use: one PORT_IN_USE line naming the port and suggesting --port 0, exit 1", async () => {
    occupier = createServer();
    await new Promise<void>((resolve) => occupier!.listen(0, "127.0.0.1", resolve));
    const port = (occupier.address() as AddressInfo).port;
    const result = await serve(["--port", String(port)]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(onlyLine(result)).toBe(`PORT_IN_USE: port ${port} is already in use on 127.0.0.1 (another veil serve?); choose another with --port N, or --port 0 to have a free one picked`);
  });

  it.skipIf(!canMeetEacces)("a privileged port as an ordinary user: one PORT_NOT_PERMITTED line that says why, exit 1", async () => {
    // Root may bind port 80; the check is about what an ordinary user meets, so a root run becomes nobody.
    if (isRoot) for (const dir of [ws.root, join(ws.root, "home")]) chmodSync(dir, 0o777);
    const result = await serve(["--port", String(PRIVILEGED_PORT)], isRoot ? { uid: NOBODY, gid: NOBODY } : {});
    expect(result.code).toBe(1);
    expect(onlyLine(result)).toBe(
      `PORT_NOT_PERMITTED: not allowed to listen on 127.0.0.1:${PRIVILEGED_PORT}: ports below 1024 need root or CAP_NET_BIND_SERVICE; use --port 1024 or above, or --port 0 to have a free one picked`,
    );
  });

  it("a host that is not this machine's: one CONFIG_ERROR line naming it, exit 1", async () => {
    // 192.0.2.0/24 is reserved for documentation: no machine has it.
    const result = await serve(["--port", "0", "--host", "192.0.2.1"]);
    expect(result.code).toBe(1);
    expect(onlyLine(result)).toBe(`CONFIG_ERROR: cannot listen on 192.0.2.1:0: "192.0.2.1" is not an address of this machine; use --host 127.0.0.1 (this machine only) or --host 0.0.0.0 (every interface)`);
  });
});

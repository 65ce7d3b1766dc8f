/**
 * GET /health says whether bash and custom tools run sandboxed: `sandbox: { mode, active,
 * backend }`, the typed client too; a server that cannot make a sandbox under "auto" logs
 * one warning when it starts.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, closeSync, constants, existsSync, openSync, writeFileSync, writeSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { VeilClient } from "../../src/client/index.js";
import { detectSandbox, SANDBOX_SUPPORT_KEY, SandboxProbe } from "../../src/tools/shared/sandbox/probe.js";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";
import { startFakeLlm } from "../helpers/fake-llm.js";
import { sandboxUnavailable } from "../helpers/sandbox.js";
import { built, spawnServer } from "../helpers/spawned-server.js";
import { tmpWorkspace } from "../helpers/workspace.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

const health = async (h: RuntimeHarness) => {
  const server = await h.serve();
  return new VeilClient({ baseUrl: server.url, secret: TEST_SECRET }).health();
};

describe("GET /health: the sandbox", () => {
  it.skipIf(sandboxUnavailable())("reports bubblewrap active under the default mode (auto) where bwrap works", async () => {
    h = await createRuntimeHarness();
    expect((await health(h)).sandbox).toEqual({ mode: "auto", active: true, backend: "bubblewrap" });
  });

  it("reports off, and required without a working sandbox", async () => {
    h = await createRuntimeHarness({ settings: { sandbox: { mode: "off" } } });
    expect((await health(h)).sandbox).toEqual({ mode: "off", active: false, backend: null });
    await h.close();
    h = await createRuntimeHarness({ settings: { sandbox: { mode: "required" } } });
    h.runtime.resources.get(SANDBOX_SUPPORT_KEY, () => new SandboxProbe(() => detectSandbox("linux", "/nonexistent"), async () => detectSandbox("linux", "/nonexistent")));
    expect((await health(h)).sandbox).toEqual({ mode: "required", active: false, backend: null });
  });

  it.skipIf(!built)("a server that cannot make a sandbox under auto warns once at start and reports it", async () => {
    const ws = tmpWorkspace();
    const llm = await startFakeLlm();
    // No bwrap on PATH (node is started by its absolute path).
    const server = await spawnServer(ws.root, { baseUrl: llm.baseUrl, env: { PATH: "/nonexistent" } });
    try {
      expect(await (await fetch(`${server.url}/health`)).json()).toMatchObject({ sandbox: { mode: "auto", active: false, backend: null } });
      await expect.poll(() => server.stderr().match(/sandbox\.mode is \\?"auto\\?" but bubblewrap \(bwrap\) is not on PATH/g)?.length).toBe(1);
    } finally {
      await server.kill();
      await llm.close();
      ws.cleanup();
    }
  });

  it.skipIf(!built)("a server listens before its sandbox probe has finished; /health waits for the probe's verdict", async () => {
    const ws = tmpWorkspace();
    const llm = await startFakeLlm();
    // A bwrap that holds the probe until the test lets it go, then fails as a refusing kernel would.
    const fifo = ws.path("release.fifo");
    const started = ws.path("probe-started");
    const released = ws.path("released");
    execFileSync("mkfifo", [fifo]);
    const fakeBwrap = ws.write("bin/bwrap", `#!/bin/sh\ntouch '${started}'\n[ -e '${released}' ] || read line < '${fifo}'\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n`);
    chmodSync(fakeBwrap, 0o755);
    const server = await spawnServer(ws.root, { baseUrl: llm.baseUrl, env: { PATH: `${ws.path("bin")}:${process.env.PATH}` } });
    try {
      // Listening while the probe is still held: the port does not wait for it.
      await expect.poll(() => existsSync(started)).toBe(true);
      expect(existsSync(released)).toBe(false);
      const answer = fetch(`${server.url}/health`).then((response) => response.json());
      writeFileSync(released, "");
      // Non-blocking: ENXIO until the probe reads the fifo (never, had it timed out before the server listened).
      let release: number | undefined;
      const openRelease = () => {
        try {
          release ??= openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
        } catch {
          // no reader yet
        }
        return release;
      };
      await expect.poll(openRelease).toBeDefined();
      writeSync(release!, "go\n");
      closeSync(release!);
      expect(await answer).toMatchObject({ sandbox: { mode: "auto", active: false, backend: null } });
      await expect.poll(() => server.stderr().match(/bwrap cannot make a sandbox here: bwrap: No permissions to create new namespace/g)?.length).toBe(1);
    } finally {
      await server.kill();
      await llm.close();
      ws.cleanup();
    }
  });
});

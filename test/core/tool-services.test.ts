import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MULTI_AGENT_SERVICE, MultiAgentService } from "../../src/core/agents/service.js";
import { RemoteMethodService } from "../../src/core/remote-methods.js";
import { WakeupService } from "../../src/core/wakeups.js";
import { extensionOf } from "../../src/tools/services.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith(".ts") ? [path] : [];
  });
}

describe("tool services", () => {
  let h: RuntimeHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("are whole when the runtime hands them out, and nothing is added to them later", async () => {
    h = await createRuntimeHarness({ start: false });
    const { services } = h.runtime;
    expect(Object.isFrozen(services)).toBe(true);
    expect(services.wakeups).toBeInstanceOf(WakeupService);
    expect(services.remoteMethods).toBeInstanceOf(RemoteMethodService);
    expect(services.llm).toBe(h.runtime.llm);
    expect(extensionOf(services, MULTI_AGENT_SERVICE)).toBeInstanceOf(MultiAgentService);
    expect(extensionOf(services, MULTI_AGENT_SERVICE)).toBe(h.runtime.multiAgent);
    // The harness's shell knobs came in through the runtime's options, not by a later assignment.
    expect(services.shell?.env?.HOME).toContain(".veil-home");
  });

  it("know the server's own address once it listens (web_fetch refuses it)", async () => {
    h = await createRuntimeHarness({ start: false });
    expect(h.runtime.services.selfAddress?.get()).toBeUndefined();
    const server = await h.serve();
    expect(h.runtime.services.selfAddress?.get()).toEqual({ host: "127.0.0.1", port: server.port });
  });

  it("are never widened by declaration merging, which would hide an upward dependency from the layer check", () => {
    const merging = sourceFiles(join(import.meta.dirname, "../../src")).filter((file) => /declare module\s+["']/.test(readFileSync(file, "utf8")));
    expect(merging).toEqual([]);
  });
});

/**
 * The sandbox tests' requirement: a machine where bwrap cannot make a sandbox skips them, and
 * CI (CI=true, which installs bubblewrap) fails instead, saying why — here with a bwrap that
 * answers as one in a container that refuses user namespaces.
 */
import { chmodSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { detectSandbox } from "../../../../src/tools/shared/sandbox/probe.js";
import { sandboxUnavailable } from "../../../helpers/sandbox.js";
import { tmpWorkspace, type TempWorkspace } from "../../../helpers/workspace.js";

let ws: TempWorkspace | undefined;
const ci = process.env.CI;
afterEach(() => {
  ws?.cleanup();
  ws = undefined;
  if (ci === undefined) delete process.env.CI;
  else process.env.CI = ci;
});

/** What detectSandbox() finds when bwrap exists but the kernel refuses it namespaces. */
function refusedNamespaces() {
  ws = tmpWorkspace();
  const bwrap = ws.write("bin/bwrap", "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n");
  chmodSync(bwrap, 0o755);
  return detectSandbox("linux", ws.path("bin"));
}

describe("the sandbox tests' requirement", () => {
  it("is met where bwrap works", () => {
    expect(sandboxUnavailable({ available: true, backend: "bubblewrap", bwrap: "/usr/bin/bwrap", flags: [] })).toBeUndefined();
  });

  it("skips on a machine whose kernel refuses user namespaces, naming why", () => {
    delete process.env.CI;
    expect(sandboxUnavailable(refusedNamespaces())).toMatch(/^the sandbox tests need a working bubblewrap, and bwrap cannot make a sandbox here: bwrap: No permissions to creating new namespace.*does not let bwrap create user namespaces/);
  });

  it("fails under CI=true with the same reason", () => {
    process.env.CI = "true";
    expect(() => sandboxUnavailable(refusedNamespaces())).toThrow(/^CI=true, but the sandbox tests need a working bubblewrap, and bwrap cannot make a sandbox here: bwrap: No permissions to creating new namespace/);
    expect(() => sandboxUnavailable(detectSandbox("linux", "/nonexistent"))).toThrow(/CI=true, but the sandbox tests need a working bubblewrap, and bubblewrap \(bwrap\) is not on PATH/);
  });
});

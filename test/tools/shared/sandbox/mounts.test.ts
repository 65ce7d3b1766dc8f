/**
 * What the sandbox's private /tmp must not cover: the folders Veil runs from when they lie under
 * the host's /tmp (a checkout in /tmp: a custom tool's process starts from Veil's own child
 * entry, which the private /tmp hid). Checked on the mount list and with the real bubblewrap.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { layoutMounts, mountArgs, runtimeRoots, type SandboxLayout } from "../../../../src/tools/shared/sandbox/mounts.js";
import { detectSandbox } from "../../../../src/tools/shared/sandbox/probe.js";
import { sandboxUnavailable } from "../../../helpers/sandbox.js";

const support = detectSandbox();
const noSandbox = sandboxUnavailable(support);

let root: string;
let layout: (runtime: string[]) => SandboxLayout;
beforeEach(() => {
  // Under the host's /tmp on purpose: that is what the private /tmp covers.
  root = realpathSync(mkdtempSync("/tmp/veil-mounts-"));
  for (const dir of ["ws", "pkg/dist", "private/tmp", "private/home"]) mkdirSync(join(root, dir), { recursive: true });
  writeFileSync(join(root, "pkg/dist/child-main.js"), "the runner\n");
  writeFileSync(join(root, "private/empty"), "");
  layout = (runtime) => ({
    workspace: join(root, "ws"),
    writeRoots: [],
    projectDir: join(root, "ws/.veil"),
    veilHome: join(root, "home-not-made"),
    readDeny: [],
    network: "none",
    privateDir: { root: join(root, "private"), tmp: join(root, "private/tmp"), home: join(root, "private/home"), empty: join(root, "private/empty") },
    runtimeRoots: runtime,
  });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("the folders Veil runs from, under the host's /tmp", () => {
  it("are mounted read-only; not when they lie inside the workspace (writable already) or outside /tmp (the host's root shows them)", () => {
    const pkg = join(root, "pkg");
    expect(layoutMounts(layout([pkg])).find((m) => m.path === pkg)).toEqual({ path: pkg, kind: "read-only" });
    mkdirSync(join(root, "ws/veil"));
    expect(layoutMounts(layout([join(root, "ws/veil")])).map((m) => m.path)).not.toContain(join(root, "ws/veil"));
    expect(layoutMounts(layout(["/usr"])).map((m) => m.path)).not.toContain("/usr");
  });

  it("by default are Veil's package folder and the node binary's install folder", () => {
    const [pkg, nodeRoot] = runtimeRoots();
    expect(realpathSync(join(pkg!, "package.json"))).toBeTruthy();
    expect(process.execPath.startsWith(nodeRoot!)).toBe(true);
  });

  it.skipIf(!!noSandbox)("can be read inside a real bubblewrap sandbox, and could not without the mount", () => {
    if (!support.available) return;
    const read = (runtime: string[]) =>
      spawnSync(support.bwrap, [...support.flags, ...mountArgs(layout(runtime)), "--", "cat", join(root, "pkg/dist/child-main.js")], { encoding: "utf8" });
    const seen = read([join(root, "pkg")]);
    expect(seen.stdout).toBe("the runner\n");
    const hidden = read([]);
    expect(hidden.status).not.toBe(0);
    expect(hidden.stderr).toMatch(/No such file or directory/);
  });
});

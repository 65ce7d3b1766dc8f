import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tmpWorkspace, type TempWorkspace } from "../../helpers/workspace.js";
import { displayPath, guardRead, guardWrite, isReadProtected, isWriteProtected, pathPolicyFromContext, resolveToolPath, type PathPolicy } from "../../../src/tools/shared/path-guard.js";
import { Resources } from "../../../src/core/resources.js";
import { isVeilError } from "../../../src/errors.js";

let ws: TempWorkspace;
const cleanups: string[] = [];
afterEach(() => {
  ws?.cleanup();
  for (const dir of cleanups.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function policy(root: string, writeRoots: string[] = []): PathPolicy {
  return { workspace: root, writeRoots, runtimeDirs: [join(root, ".veil")], secretFiles: [] };
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return isVeilError(error) ? error.code : String(error);
  }
}

describe("path guard", () => {
  it("resolves relative paths against the workspace and shows workspace paths relatively", () => {
    expect(resolveToolPath("/ws", "src/a.ts")).toBe("/ws/src/a.ts");
    expect(resolveToolPath("/ws", "/etc/hosts")).toBe("/etc/hosts");
    expect(displayPath("/ws", "/ws/src/a.ts")).toBe("src/a.ts");
    expect(displayPath("/ws", "/elsewhere/a.ts")).toBe("/elsewhere/a.ts");
    expect(displayPath("/ws", "/ws")).toBe(".");
  });

  it("protects secrets from reads and the runtime's files from writes, but not memory", () => {
    const p = policy("/ws");
    expect(isReadProtected(p, "/ws/.veil/secret")).toBe(true);
    expect(isReadProtected(p, "/ws/.veil/veil.db-shm")).toBe(true);
    expect(isReadProtected(p, "/ws/.veil/settings.json")).toBe(false);
    for (const path of ["/ws/.veil/agents/x/AGENT.md", "/ws/.veil/tools/t/tool.json", "/ws/.veil/settings.json", "/ws/.veil/models.json", "/ws/.veil/secret"]) {
      expect(isWriteProtected(p, path), path).toBe(true);
    }
    expect(isWriteProtected(p, "/ws/.veil/memory/MEMORY.md")).toBe(false);
    expect(isWriteProtected(p, "/ws/src/settings.json")).toBe(false);
    expect(isWriteProtected(p, "/ws/.veil/agents-notes.md")).toBe(false);
  });

  it("resolves a new file under a symlinked folder to its real location", async () => {
    ws = tmpWorkspace({ files: { "real/keep.txt": "k" } });
    symlinkSync(ws.path("real"), ws.path("alias"));
    const target = await guardWrite(policy(ws.root), ws.path("alias/new/file.txt"));
    expect(target).toEqual({ requested: ws.path("alias/new/file.txt"), real: join(ws.root, "real/new/file.txt"), exists: false });
  });

  it("refuses a symlink to the outside unless its target is under a write root", async () => {
    ws = tmpWorkspace();
    const outside = realpathSync(mkdtempSync(join(tmpdir(), "veil-pg-")));
    cleanups.push(outside);
    symlinkSync(outside, ws.path("out"));
    expect(await codeOf(guardWrite(policy(ws.root), ws.path("out/x.txt")))).toBe("PATH_OUTSIDE_WORKSPACE");
    expect(await codeOf(guardWrite(policy(ws.root, [outside]), ws.path("out/x.txt")))).toBeUndefined();
  });

  it("refuses broken symlinks and symlink loops anywhere on the way", async () => {
    ws = tmpWorkspace();
    symlinkSync(ws.path("missing"), ws.path("dangling"));
    symlinkSync(ws.path("loop-b"), ws.path("loop-a"));
    symlinkSync(ws.path("loop-a"), ws.path("loop-b"));
    expect(await codeOf(guardWrite(policy(ws.root), ws.path("dangling")))).toBe("BROKEN_SYMLINK");
    expect(await codeOf(guardWrite(policy(ws.root), ws.path("dangling/child.txt")))).toBe("BROKEN_SYMLINK");
    expect(await codeOf(guardWrite(policy(ws.root), ws.path("loop-a")))).toBe("BROKEN_SYMLINK");
  });

  it("refuses a write that reaches a protected file through a symlinked .veil folder", async () => {
    ws = tmpWorkspace({ files: { ".veil/settings.json": "{}" } });
    symlinkSync(ws.path(".veil"), ws.path("cfg"));
    expect(await codeOf(guardWrite(policy(ws.root), ws.path("cfg/settings.json")))).toBe("PATH_PROTECTED");
  });

  it("resolves the protected paths once per runtime and still guards a secret created afterwards through a symlinked .veil", async () => {
    ws = tmpWorkspace({ files: { "state/veil.db": "db" } });
    symlinkSync(ws.path("state"), ws.path(".veil"));
    const runtime = new Resources();
    const ctx = {
      workspace: ws.root,
      runtime,
      paths: { projectDir: ws.path(".veil"), homeDir: ws.path("home"), secretPath: ws.path(".veil/secret"), dbPath: ws.path(".veil/veil.db") },
    } as unknown as Parameters<typeof pathPolicyFromContext>[0];
    const first = pathPolicyFromContext(ctx);
    // Everything the per-call resolution protects, and a file not there yet at its real location too.
    const uncached = pathPolicyFromContext({ ...ctx, runtime: undefined });
    expect(first.runtimeDirs).toEqual(uncached.runtimeDirs);
    expect(first.secretFiles).toEqual(expect.arrayContaining(uncached.secretFiles));
    expect(first.secretFiles).toContain(join(realpathSync(ws.path("state")), "veil.db-wal"));
    // The secret appears after the first tool call: read through the real folder, it is still refused.
    writeFileSync(ws.path("state/secret"), "key");
    const later = pathPolicyFromContext(ctx);
    expect(later.secretFiles).toContain(join(realpathSync(ws.path("state")), "secret"));
    expect(await codeOf(guardRead(later, ws.path("state/secret")))).toBe("PATH_PROTECTED");
    expect(await codeOf(guardRead(later, ws.path("state/veil.db")))).toBe("PATH_PROTECTED");
    expect(await codeOf(guardRead(later, ws.path("state/notes.md")))).toBeUndefined();
    await runtime.dispose();
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tempFileName } from "../../src/tools/shared/leftovers.js";
import { reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { built, spawnServer, type SpawnedServer } from "../helpers/spawned-server.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let llm: FakeLlm | undefined;
let ws: TempWorkspace | undefined;
let shellTmp: string | undefined;
const servers: SpawnedServer[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await server.kill();
  await llm?.close();
  ws?.cleanup();
  if (shellTmp) rmSync(shellTmp, { recursive: true, force: true });
  llm = ws = shellTmp = undefined;
});

/** A pid that certainly names no process: one that has exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ["-e", "0"]).pid!;
}

const shellDirs = (dir: string) => readdirSync(dir).filter((name) => name.startsWith("veil-shell-"));

describe.skipIf(!built)("leftovers of a server killed -9 (spawned servers)", () => {
  it("the next veil serve removes the dead server's shell folder and temp files, and nothing of a live owner", async () => {
    ws = tmpWorkspace({ files: { "keep.txt": "x" } });
    shellTmp = mkdtempSync(join(tmpdir(), "veil-leftovers-tmp-"));
    llm = await startFakeLlm();
    const env = { TMPDIR: shellTmp };

    // Server 1 opens a shell for a session, then dies by SIGKILL: its folder stays behind.
    const first = await spawnServer(ws.root, { baseUrl: llm.baseUrl, env });
    servers.push(first);
    llm.enqueue(reply().tool("bash", { command: "echo hi" }).stop(), reply().text("done").stop());
    const session = await (await first.fetch("/sessions", { method: "POST", body: "{}" })).json();
    const chat = await first.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "run it" }) });
    expect(chat.status).toBe(200);
    await first.kill();
    const deadShells = shellDirs(shellTmp);
    expect(deadShells).toEqual([expect.stringMatching(new RegExp(`^veil-shell-${first.child.pid}-`))]);

    // Writes cut short: one of a dead owner, one of an older version (no owner) an hour old.
    const gone = deadPid();
    mkdirSync(ws.path("src"));
    const deadWrite = ws.write(`src/${tempFileName("a.ts", "abc123", gone)}`, "partial");
    const oldWrite = ws.write(".notes.md.0a1b2c3d4e5f.veil-tmp", "partial");
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(oldWrite, hourAgo, hourAgo);
    // A write in flight of a live owner (this test process), and a live owner's shell folder.
    const liveWrite = ws.write(tempFileName("b.ts", "def456"), "in flight");
    const liveShell = join(shellTmp, `veil-shell-${process.pid}-live`);
    mkdirSync(liveShell);
    const otherTemp = join(shellTmp, "someone-else");
    writeFileSync(otherTemp, "");
    // An older version's shell folder has no owner in its name: it may belong to a live server.
    const legacyShell = join(shellTmp, "veil-shell-AbC123");
    mkdirSync(legacyShell);
    utimesSync(legacyShell, hourAgo, hourAgo);

    const second = await spawnServer(ws.root, { baseUrl: llm.baseUrl, env });
    servers.push(second);
    await expect.poll(() => [deadWrite, oldWrite, ...deadShells.map((d) => join(shellTmp!, d))].filter(existsSync)).toEqual([]);
    expect([liveWrite, liveShell, legacyShell, otherTemp, ws.path("keep.txt")].filter(existsSync)).toHaveLength(5);
    expect((await second.fetch("/health")).status).toBe(200);
  });
});

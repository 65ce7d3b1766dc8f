import { execFileSync } from "node:child_process";
import { appendFileSync, chmodSync, linkSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FULL_SCAN_EVERY_MS } from "../../src/core/checkpoints/folder-watch.js";
import { StampManifest } from "../../src/core/checkpoints/manifest.js";
import { WorkspaceTracker } from "../../src/core/checkpoints/workspace-tracker.js";

const roots: string[] = [];
const trackers: WorkspaceTracker[] = [];
afterEach(() => {
  for (const tracker of trackers.splice(0)) tracker.close();
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function setup(files: Record<string, string>) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "veil-watch-")));
  roots.push(root);
  const ws = join(root, "ws");
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(ws, path, ".."), { recursive: true });
    writeFileSync(join(ws, path), text);
  }
  let clock = 1_000_000;
  const tracker = new WorkspaceTracker(ws, join(root, "state"), [], () => clock);
  trackers.push(tracker);
  const summary = async () => (await tracker.settle()).map((c) => `${c.change} ${c.path}`);
  return { root, ws, tracker, summary, advance: (ms: number) => (clock += ms), sh: (script: string) => execFileSync("bash", ["-c", script], { cwd: ws }) };
}

describe("the workspace tracker reads only the folders a watch saw change", () => {
  it("sees a shell's writes in nested, new, moved-away and chmod-ed folders through the watches", async () => {
    const { tracker, summary, sh } = setup({ "a.txt": "a\n", "src/one/x.ts": "x\n", "src/one/deep/y.ts": "y\n", "src/two/z.ts": "z\n" });
    await tracker.ready();
    expect(await summary()).toEqual([]);

    sh("echo changed > src/one/deep/y.ts && mkdir -p new/inner && echo n > new/inner/n.txt && chmod 755 src/two/z.ts");
    expect(await summary()).toEqual(["added new/inner/n.txt", "modified src/one/deep/y.ts", "modified src/two/z.ts"]);

    // A folder moved out of the workspace: only its parent hears of it, everything under it is gone.
    sh("mv src/one ../moved-away");
    expect(await summary()).toEqual(["deleted src/one/deep/y.ts", "deleted src/one/x.ts"]);

    // The new folder is watched: a write deep in it is seen; a folder moved in is read whole.
    sh("echo again > new/inner/n.txt && mv ../moved-away src/back");
    expect(await summary()).toEqual(["modified new/inner/n.txt", "added src/back/deep/y.ts", "added src/back/x.ts"]);
    // A folder removed and made again under its name: the new folder is watched, not the gone one.
    sh("rm -r src/two && mkdir src/two && echo 1 > src/two/again.txt");
    expect(await summary()).toEqual(["added src/two/again.txt", "deleted src/two/z.ts"]);
    sh("echo 2 > src/two/later.txt");
    expect(await summary()).toEqual(["added src/two/later.txt"]);
    sh("rm -r src/back src/two && rm a.txt");
    expect(await summary()).toEqual(["deleted a.txt", "deleted src/back/deep/y.ts", "deleted src/back/x.ts", "deleted src/two/again.txt", "deleted src/two/later.txt"]);
    expect(await summary()).toEqual([]);
  });

  it("skips the scan when no watch fired, and still finds a write no watch sees at the full scan that follows within a minute", async () => {
    const { root, tracker, summary, advance, ws } = setup({ "src/linked.txt": "one\n", "src/other.txt": "o\n" });
    await tracker.ready();
    // A hard link outside the workspace: a write through it raises no event in the workspace's folders.
    linkSync(join(ws, "src/linked.txt"), join(root, "outside-link.txt"));
    await summary(); // the link changed the file's ctime: whatever the watch made of it is taken here
    advance(FULL_SCAN_EVERY_MS); // one full scan now, so the next minute is the watch's
    await summary();
    writeFileSync(join(root, "outside-link.txt"), "two, written from outside\n");
    chmodSync(join(root, "outside-link.txt"), 0o600);
    // No watch fired: nothing is read, so nothing is seen yet (a scan of every file would have seen it).
    expect(await summary()).toEqual([]);
    advance(FULL_SCAN_EVERY_MS - 1);
    expect(await summary()).toEqual([]);
    advance(1);
    expect(await summary()).toEqual(["modified src/linked.txt"]);
  });

  it("after a restart the first settle reads every folder (the changes made while no watch ran)", async () => {
    const { root, ws, tracker, sh, summary } = setup({ "keep/k.txt": "k\n" });
    await tracker.ready();
    // Saved as a journal line beside the first snapshot: read back after the restart, not seen again.
    sh("echo j > keep/journaled.txt");
    expect(await summary()).toEqual(["added keep/journaled.txt"]);
    tracker.close();
    sh("echo offline > keep/k.txt && echo new > fresh.txt");
    const again = new WorkspaceTracker(ws, join(root, "state"));
    trackers.push(again);
    await again.ready();
    expect((await again.settle()).map((c) => `${c.change} ${c.path}`)).toEqual(["added fresh.txt", "modified keep/k.txt"]);
    sh("echo watched > keep/k.txt");
    expect((await again.settle()).map((c) => `${c.change} ${c.path}`)).toEqual(["modified keep/k.txt"]);
  });
});

describe("the stamps saved between restarts", () => {
  const stamp = (size: number) => ({ size, mtimeMs: size, ctimeMs: size, ino: size, mode: 0o644 });

  it("are a snapshot and a journal of the settles since: read back whole, compacted once long, a line cut by a crash ignored", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "veil-manifest-")));
    roots.push(dir);
    const manifest = new StampManifest(dir);
    const all = new Map([["a", stamp(1)]]);
    await manifest.snapshot(all);
    for (let i = 0; i < 250; i++) {
      all.set(`f${i}`, stamp(i));
      if (i > 0) all.delete(`f${i - 1}`);
      manifest.changed(`f${i}`, stamp(i));
      if (i > 0) manifest.changed(`f${i - 1}`, null);
      await manifest.flush(all);
    }
    const journal = readFileSync(join(dir, "manifest.log"), "utf8").trim().split("\n");
    expect(journal.length).toBeLessThan(200);
    appendFileSync(join(dir, "manifest.log"), '[99, [["torn"');
    expect(await new StampManifest(dir).load()).toEqual(new Map([["a", stamp(1)], ["f249", stamp(249)]]));
  });
});

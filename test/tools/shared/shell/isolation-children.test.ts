import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { childrenOf } from "../../../../src/tools/shared/shell/isolation.js";

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A /proc look-alike: each process gets `<pid>/stat` (with its ppid), and `task/<pid>/children` when `withChildren`. */
function fakeProc(processes: { pid: number; ppid: number }[], withChildren: boolean): string {
  const root = mkdtempSync(join(tmpdir(), "veil-proc-"));
  roots.push(root);
  for (const { pid, ppid } of processes) {
    mkdirSync(join(root, String(pid), "task", String(pid)), { recursive: true });
    writeFileSync(join(root, String(pid), "stat"), `${pid} (bash) S ${ppid} ${pid} ${pid} 0 -1\n`);
    if (withChildren) {
      const kids = processes.filter((p) => p.ppid === pid).map((p) => p.pid);
      writeFileSync(join(root, String(pid), "task", String(pid), "children"), kids.map((k) => `${k} `).join(""));
    }
  }
  return root;
}

describe("childrenOf", () => {
  const tree = [
    { pid: 10, ppid: 1 },
    { pid: 11, ppid: 10 },
    { pid: 12, ppid: 10 },
    { pid: 13, ppid: 11 },
  ];

  it("reads the kernel's children list", () => {
    expect(childrenOf(10, fakeProc(tree, true))).toEqual([11, 12]);
  });

  it("falls back to a ppid scan when the kernel has no children lists", () => {
    expect(childrenOf(10, fakeProc(tree, false)).sort()).toEqual([11, 12]);
  });

  it("answers none for a process that is gone, without scanning every process", () => {
    const root = fakeProc(tree, true);
    // A stat claiming pid 99 as its parent: a scan would report it, the answer for a gone pid must not.
    mkdirSync(join(root, "50", "task", "50"), { recursive: true });
    writeFileSync(join(root, "50", "stat"), "50 (sh) S 99 50 50 0 -1\n");
    expect(childrenOf(99, root)).toEqual([]);
  });
});

import { describe, expect, it } from "vitest";
import { comparePaths } from "../../../src/tools/shared/file-walk.js";

/** The definition comparePaths must agree with: split into components, compare them in turn. */
function byComponents(a: string, b: string): number {
  const pa = a.split(/[\\/]/);
  const pb = b.split(/[\\/]/);
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    if (pa[i] !== pb[i]) return pa[i]! < pb[i]! ? -1 : 1;
  }
  return Math.sign(pa.length - pb.length);
}

describe("comparePaths", () => {
  it("sorts a folder's contents where the folder's name sorts", () => {
    const paths = ["a.txt", "a/b", "a-b/c", "a/b/c", "b", "a", "A/z", "a//x", "a/", "é/1", "z\\y", "z/x"];
    expect([...paths].sort(comparePaths)).toEqual(["A/z", "a", "a/", "a//x", "a/b", "a/b/c", "a-b/c", "a.txt", "b", "z/x", "z\\y", "é/1"]);
  });

  it("agrees with a component-by-component comparison on every pair of tricky paths", () => {
    const parts = ["", "a", "b", "ab", "a.b", "a-b", "a b", "A", "é", "😀", ".", "..", "a0", "a~"];
    const paths = new Set<string>();
    for (const x of parts) {
      paths.add(x);
      for (const y of parts) for (const s of ["/", "\\", "//"]) paths.add(`${x}${s}${y}`);
    }
    const all = [...paths];
    const disagreements: string[] = [];
    for (const a of all) {
      for (const b of all) {
        if (Math.sign(comparePaths(a, b)) !== byComponents(a, b)) disagreements.push(`${a} vs ${b}`);
      }
    }
    expect(all.length).toBeGreaterThan(500);
    expect(disagreements).toEqual([]);
  });
});

import { describe, expect, it } from "vitest";
import { sentinelMarkers } from "../../../../src/tools/shared/shell/bash-script.js";
import { SentinelScanner } from "../../../../src/tools/shared/shell/sentinel-scanner.js";

const TOKEN = "0123456789abcdef01234567";
const { start, end } = sentinelMarkers(TOKEN);

function scan(pieces: Buffer[]) {
  const out: Buffer[] = [];
  const scanner = new SentinelScanner(TOKEN, (data) => out.push(Buffer.from(data)));
  let result = null;
  for (const piece of pieces) result = scanner.push(piece) ?? result;
  return { output: Buffer.concat(out).toString("utf8"), result };
}

describe("SentinelScanner", () => {
  it("separates output from the sentinel and parses exit code, syntax flag and cwd", () => {
    const { output, result } = scan([Buffer.from(`hello\nworld${start}3:0:/tmp/a:b c${end}`)]);
    expect(output).toBe("hello\nworld");
    expect(result).toEqual({ exitCode: 3, syntaxError: false, cwd: "/tmp/a:b c" });
  });

  it("finds a sentinel split across chunks at every byte", () => {
    const whole = Buffer.from(`out\x1e-not-a-marker\n${start}0:1:/x${end}trailing`);
    const bytes = [...whole].map((b) => Buffer.from([b]));
    const { output, result } = scan(bytes);
    expect(output).toBe("out\x1e-not-a-marker\n");
    expect(result).toEqual({ exitCode: 0, syntaxError: true, cwd: "/x" });
  });

  it("hands on output immediately unless its tail could start the marker", () => {
    const out: string[] = [];
    const scanner = new SentinelScanner(TOKEN, (data) => out.push(data.toString()));
    scanner.push(Buffer.from("started\n"));
    expect(out).toEqual(["started\n"]);
    scanner.push(Buffer.from(`more${start.slice(0, 5)}`));
    expect(out.join("")).toBe("started\nmore");
    scanner.drain();
    expect(out.join("")).toBe(`started\nmore${start.slice(0, 5)}`);
  });

  it("ignores a marker with another token", () => {
    const other = sentinelMarkers("ffffffffffffffffffffffff");
    const { output, result } = scan([Buffer.from(`${other.start}0:0:/${other.end}`)]);
    expect(result).toBeNull();
    expect(output.length).toBeGreaterThan(0);
  });
});

import { describe, expect, it } from "vitest";
import { createLogger, jsonLogFormat, textLogFormat } from "../../src/base/log.js";

describe("log formats", () => {
  it("text: time of day, padded level, message, then key=value fields (quoted when needed, stacks left out, long values cut)", () => {
    const line = textLogFormat({ level: "warn", time: "2026-12-01T10:11:12.345Z", msg: "llm model failed", model: "m", message: 'said "no" twice', attempts: 3, stack: "Error: …", long: "x".repeat(500) });
    expect(line).toBe(`10:11:12 WARN  llm model failed model=m message="said \\"no\\" twice" attempts=3 long=${"x".repeat(200)}…`);
  });

  it("json: one JSON object per line, as before", () => {
    const lines: string[] = [];
    createLogger({ level: "info", write: (l) => lines.push(l) }).info("hello", { a: 1 });
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: "info", msg: "hello", a: 1 });
    expect(jsonLogFormat({ level: "error", time: "t", msg: "m" })).toBe('{"level":"error","time":"t","msg":"m"}');
  });

  it("a logger with the text format writes text lines and honours the level", () => {
    const lines: string[] = [];
    const log = createLogger({ level: "warn", format: textLogFormat, write: (l) => lines.push(l) });
    log.info("hidden");
    log.error("shown", { code: "X" });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d ERROR shown code=X$/);
  });
});

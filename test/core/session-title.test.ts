import { describe, expect, it } from "vitest";
import { AUTO_TITLE_CHARS, chosenTitle, titleFromMessage } from "../../src/core/session-title.js";
import { formatAge, parseDuration } from "../../src/base/duration.js";

describe("titles", () => {
  it("a first message becomes one short line, cut at a word with an ellipsis", () => {
    expect(titleFromMessage("  Fix the failing test\n\nin src/foo.ts  ")).toBe("Fix the failing test in src/foo.ts");
    const long = "word ".repeat(40);
    const title = titleFromMessage(long)!;
    expect([...title].length).toBeLessThanOrEqual(AUTO_TITLE_CHARS);
    expect(title).toMatch(/^word( word)+…$/);
    // One long word is cut inside it; characters outside the BMP are not split in half.
    expect(titleFromMessage("x".repeat(100))).toBe(`${"x".repeat(AUTO_TITLE_CHARS - 1)}…`);
    expect(titleFromMessage("😀".repeat(100))).toBe(`${"😀".repeat(AUTO_TITLE_CHARS - 1)}…`);
    expect(titleFromMessage([{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }, { type: "text", text: "What is\nthis?" }])).toBe("What is this?");
    expect(titleFromMessage([{ type: "image_url", image_url: { url: "https://example.com/a.png" } }])).toBeNull();
    expect(titleFromMessage(" \n\t ")).toBeNull();
  });

  it("a chosen title is folded to one line; empty or too long is refused; null clears", () => {
    expect(chosenTitle(" Release\n notes ")).toBe("Release notes");
    expect(chosenTitle(null)).toBeNull();
    expect(() => chosenTitle("  ")).toThrow(/title: give some text/);
    expect(() => chosenTitle("x".repeat(201))).toThrow(/at most 200/);
    expect(chosenTitle("é".repeat(200))).toHaveLength(200);
  });
});

describe("durations", () => {
  it("parses a number and a unit, and refuses anything else naming the setting", () => {
    expect(parseDuration("90s", "x")).toBe(90_000);
    expect(parseDuration(" 1.5h ", "x")).toBe(5_400_000);
    expect(parseDuration("7d", "x")).toBe(604_800_000);
    expect(parseDuration("2w", "x")).toBe(1_209_600_000);
    for (const bad of ["7", "d", "-1d", "1 day", "1y", ""]) expect(() => parseDuration(bad, "--idle"), bad).toThrow(/^--idle: .* is not a duration/);
  });

  it("formats ages coarsely", () => {
    expect([0, 59_999, 60_000, 3_599_999, 3_600_000, 86_400_000 * 3 + 5].map(formatAge)).toEqual(["0s", "59s", "1m", "59m", "1h", "3d"]);
  });
});

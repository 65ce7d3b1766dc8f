import { afterEach, describe, expect, it } from "vitest";
import { present, unavailableUnlessCI } from "../helpers/requirements.js";

describe("tests that need PostgreSQL, Chromium, a tool or the build", () => {
  const ci = process.env.CI;
  afterEach(() => {
    if (ci === undefined) delete process.env.CI;
    else process.env.CI = ci;
  });

  it("skip on a machine that lacks it", () => {
    delete process.env.CI;
    expect(present("Chromium (/nowhere/chromium)", false)).toBe(false);
    expect(unavailableUnlessCI("no PostgreSQL server binaries")).toBe("no PostgreSQL server binaries");
  });

  it("fail instead in CI (CI=true), naming what is missing", () => {
    process.env.CI = "true";
    expect(() => present("Chromium (/nowhere/chromium)", false)).toThrow("CI=true, but Chromium (/nowhere/chromium) is missing");
    expect(() => unavailableUnlessCI("no PostgreSQL server binaries")).toThrow(/CI=true, but no PostgreSQL server binaries/);
    expect(present("the build", true)).toBe(true);
    expect(unavailableUnlessCI(undefined)).toBeUndefined();
  });
});

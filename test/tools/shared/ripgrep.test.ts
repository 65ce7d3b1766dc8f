import { describe, expect, it } from "vitest";
import { Resources } from "../../../src/core/resources.js";
import { RipgrepLocator, ripgrepPath, RIPGREP_KEY, runRipgrep } from "../../../src/tools/shared/ripgrep.js";
import { present } from "../../helpers/requirements.js";

describe("ripgrep locator", () => {
  it("answers null for a command that does not exist", async () => {
    expect(await new RipgrepLocator("definitely-not-rg-xyz").locate()).toBeNull();
  });

  it("honours the services override and probes once per runtime", async () => {
    const runtime = new Resources();
    expect(await ripgrepPath({ services: { ripgrepPath: null }, runtime })).toBeNull();
    expect(await ripgrepPath({ services: { ripgrepPath: "/opt/rg" }, runtime })).toBe("/opt/rg");
    expect(runtime.peek(RIPGREP_KEY)).toBeUndefined();
    const first = await ripgrepPath({ services: {}, runtime });
    const locator = runtime.peek<RipgrepLocator>(RIPGREP_KEY);
    expect(locator).toBeInstanceOf(RipgrepLocator);
    expect(await ripgrepPath({ services: {}, runtime })).toBe(first);
    expect(runtime.peek(RIPGREP_KEY)).toBe(locator);
    await runtime.dispose();
  });

  it("streams lines and stops rg when asked", async (test) => {
    const rg = await new RipgrepLocator().locate();
    if (!present("ripgrep (rg)", Boolean(rg))) {
      console.warn("rg is not installed: skipping the streaming test");
      test.skip();
      return;
    }
    const lines: string[] = [];
    // `rg --files /` would list the whole disk; stopping after 3 lines must end it.
    const result = await runRipgrep({ binary: rg, args: ["--files", "/usr"], cwd: "/", onLine: (line) => lines.push(line) < 3 });
    expect(lines).toHaveLength(3);
    expect(result.stopped).toBe(true);
  });
});

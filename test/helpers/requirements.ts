/**
 * Tests that need something a machine may lack (PostgreSQL, Chromium, the build, a system
 * tool) skip without it on a developer's machine. In CI (CI=true) the fresh clone installs
 * all of them, so a missing one is a broken install step: the test file fails at once,
 * naming what is missing, instead of skipping quietly.
 */
export function present(what: string, there: boolean): boolean {
  if (!there && process.env.CI === "true") throw new Error(`CI=true, but ${what} is missing: the tests that need it would have been skipped`);
  return there;
}

/** A reason a test cannot run here (undefined: it can), with the same CI rule as present(). */
export function unavailableUnlessCI(reason: string | undefined): string | undefined {
  if (reason !== undefined && process.env.CI === "true") throw new Error(`CI=true, but ${reason}: the tests that need it would have been skipped`);
  return reason;
}

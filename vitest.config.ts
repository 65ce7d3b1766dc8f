import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // expect.poll's default 1 s is shorter than a child's exit or a file's removal takes on a
    // loaded machine (2 cores, many test processes); the bound only ends a failing wait.
    expect: { poll: { timeout: 15_000 } },
    reporters: ["default", "./test/summary-reporter.ts"],
  },
});

/**
 * Browser-test harness: a real `veil serve --port 0` (spawned from dist/) on a temp
 * workspace whose provider is the fake LLM, and Debian's Chromium driven by
 * playwright-core with a fresh profile.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { expect } from "vitest";
import { startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";

export const MAIN = fileURLToPath(new URL("../../dist/src/main.js", import.meta.url));
export const CHROMIUM = "/usr/bin/chromium";
export const SECRET = "dashboard-test-secret-7f3a";

export interface VeilServer {
  url: string;
  port: number;
  stop(): Promise<void>;
}

export interface Harness {
  llm: FakeLlm;
  ws: TempWorkspace;
  server: VeilServer;
  context: BrowserContext;
  /** Stops the server and starts it again on the same workspace and port. */
  restart(options?: { between?: () => Promise<void> }): Promise<void>;
  /** A new tab, signed in. */
  signedIn(): Promise<Page>;
  close(): Promise<void>;
}

export async function startHarness(files: Record<string, string> = {}): Promise<Harness> {
  const llm = await startFakeLlm();
  const ws = tmpWorkspace({
    files: {
      ".veil/settings.json": JSON.stringify({
        providers: { fake: { type: "openai", baseUrl: llm.baseUrl, apiKey: "sk-fake" } },
        defaultProvider: "fake",
        defaultModel: "fake/fake-model",
        retry: { maxRetries: 0 },
      }),
      ...files,
    },
  });
  mkdirSync(join(ws.root, "home"), { recursive: true });
  let server = await startVeil(ws.root, 0);
  const profile = mkdtempSync(join(tmpdir(), "veil-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"],
    viewport: { width: 1280, height: 800 },
  });
  const harness: Harness = {
    llm,
    ws,
    get server() {
      return server;
    },
    context,
    async restart(options = {}) {
      const port = server.port;
      await server.stop();
      await options.between?.();
      server = await startVeil(ws.root, port);
    },
    async signedIn() {
      const page = await context.newPage();
      watchErrors(page);
      await page.goto(`${server.url}/`);
      await signIn(page);
      return page;
    },
    async close() {
      await context.close().catch(() => undefined);
      await server.stop();
      await llm.close();
      rmSync(profile, { recursive: true, force: true });
      ws.cleanup();
    },
  };
  return harness;
}

export async function signIn(page: Page, secret = SECRET): Promise<void> {
  await page.getByTestId("login-secret").fill(secret);
  await page.getByTestId("login-submit").click();
  await page.getByTestId("connection-status").filter({ hasText: /^\s*live\s*$/ }).waitFor();
}

/** Spawns `veil serve` and resolves once it printed its `listening on` line. */
export function startVeil(workspace: string, port: number): Promise<VeilServer> {
  // HOME too: the session shell is `bash -i`, and a developer's ~/.bashrc (pyenv init…) can take seconds to run.
  const env: Record<string, string> = { ...(process.env as Record<string, string>), VEIL_HOME: join(workspace, "home"), HOME: join(workspace, "home") };
  for (const key of ["VEIL_SECRET", "VEIL_BASE_URL", "VEIL_API_KEY", "VEIL_MODEL", "VEIL_DATABASE_URL"]) delete env[key];
  const child: ChildProcess = spawn(process.execPath, [MAIN, "serve", "--workspace", workspace, "--port", String(port), "--secret", SECRET], { cwd: workspace, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return new Promise((resolve, reject) => {
    const fail = () => reject(new Error(`veil serve exited before listening:\n${output}`));
    child.once("exit", fail);
    child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
    child.stdout!.on("data", (d: Buffer) => {
      output += d.toString();
      const match = /listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(output);
      if (!match) return;
      child.off("exit", fail);
      child.stdout!.removeAllListeners("data");
      resolve({
        url: match[1]!,
        port: Number(match[2]),
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
          await exited;
        },
      });
    });
  });
}

/** Writes a custom tool folder (tool.json + index.js) into the workspace. */
export function customTool(name: string, description: string, properties: Record<string, unknown>, source: string): Record<string, string> {
  return {
    [`.veil/tools/${name}/tool.json`]: JSON.stringify({ name, description, input_schema: { type: "object", properties }, timeout: 60 }),
    [`.veil/tools/${name}/index.js`]: `'use strict';\nmodule.exports = async function execute(input) {\n${source}\n};\n`,
  };
}

export function writeFile(root: string, relative: string, content: string): void {
  writeFileSync(join(root, relative), content);
}

/** expect.poll with room for a loaded 2-core machine (the default gives up after 1 s). */
export function poll<T>(fn: () => Promise<T> | T, options: { timeout?: number } = {}) {
  return expect.poll(fn, { timeout: 15_000, interval: 50, ...options });
}

export async function closePages(h: Harness | undefined): Promise<void> {
  for (const page of h?.context.pages() ?? []) await page.close().catch(() => undefined);
}

const pageErrors = new WeakMap<Page, string[]>();

/** Collects uncaught exceptions and console errors (CSP violations land there), minus failed fetches the page handles itself. */
export function watchErrors(page: Page): void {
  const errors: string[] = [];
  pageErrors.set(page, errors);
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !/Failed to load resource/.test(message.text())) errors.push(`console: ${message.text()}`);
  });
}

export function errorsOf(page: Page): string[] {
  return pageErrors.get(page) ?? [];
}

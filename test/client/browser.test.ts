import { afterEach, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext } from "playwright-core";
import { ManualClock } from "../../src/base/clock.js";
import { startServer, type StartedServer } from "../../src/server/listen.js";
import { reply } from "../helpers/fake-llm.js";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";
import { present } from "../helpers/requirements.js";

const CHROMIUM = "/usr/bin/chromium";

/** A page origin of its own (another port than the server), serving a blank page and the client bundle. */
async function startPageServer(): Promise<string> {
  const bundle = await build({ entryPoints: [fileURLToPath(new URL("../../src/client/index.ts", import.meta.url))], bundle: true, platform: "browser", format: "esm", write: false });
  const client = bundle.outputFiles[0]!.text;
  page = createServer((req, res) => {
    if (req.url === "/client.js") return void res.writeHead(200, { "content-type": "text/javascript" }).end(client);
    res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>ui</title>");
  });
  await new Promise<void>((resolve) => page!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(page.address() as { port: number }).port}`;
}

async function openBrowser() {
  profile = mkdtempSync(join(tmpdir(), "veil-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking", "--no-first-run"],
  });
  return context.newPage();
}

let h: RuntimeHarness | undefined;
let veil: StartedServer | undefined;
let page: Server | undefined;
let context: BrowserContext | undefined;
let profile: string | undefined;
afterEach(async () => {
  await context?.close();
  await veil?.close();
  await h?.close();
  await new Promise<void>((resolve) => (page ? page.close(() => resolve()) : resolve()));
  if (profile) rmSync(profile, { recursive: true, force: true });
  h = veil = page = context = profile = undefined;
});

/**
 * The README's browser example, run in Chromium on another origin than the server: CORS
 * preflight for POST /stream-tokens, then a real EventSource whose own reconnect, after the
 * server went away and the token's minute has passed (injected clock), replays what it missed.
 */
describe.skipIf(!present(`Chromium (${CHROMIUM})`, existsSync(CHROMIUM)))("a browser EventSource on another origin (CORS + stream token)", () => {
  it("mints a token, streams, and after the connection drops past 60 s reconnects with Last-Event-ID and misses nothing", async () => {
    const pageOrigin = await startPageServer();

    const clock = new ManualClock(Date.parse("2026-01-01T00:00:00Z"));
    h = await createRuntimeHarness({ clock, settings: { server: { allowedOrigins: [pageOrigin] } } });
    veil = await startServer({ runtime: h.runtime, secret: TEST_SECRET, port: 0, closeRuntime: false });
    const port = veil.port;
    const session = await h.runtime.sessions.create({ agent: "default" });

    const tab = await openBrowser();
    await tab.goto(pageOrigin);
    await tab.evaluate(
      async ({ url, secret, sessionId }) => {
        const w = window as unknown as { seen: { id: string; type: string; content?: string }[]; opens: number };
        w.seen = [];
        w.opens = 0;
        const { token } = await (await fetch(`${url}/stream-tokens`, { method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" }, body: "{}" })).json();
        const events = new EventSource(`${url}/sessions/${sessionId}/events?token=${token}`);
        events.onopen = () => void w.opens++;
        events.onmessage = (message) => {
          const event = JSON.parse(message.data);
          w.seen.push({ id: message.lastEventId, type: event.type, content: event.content });
        };
      },
      { url: veil.url, secret: TEST_SECRET, sessionId: session.id },
    );
    await tab.waitForFunction(() => (window as unknown as { opens: number }).opens === 1);

    h.llm.enqueue(reply().text("first").stop());
    await (await h.runtime.sessions.send(session.id, "one")).result;
    await tab.waitForFunction(() => (window as unknown as { seen: { type: string }[] }).seen.some((e) => e.type === "chat.done"));

    // The server goes away; a turn runs meanwhile; the token's minute passes; the server comes back.
    await veil.close();
    h.llm.enqueue(reply().text("second").stop());
    await (await h.runtime.sessions.send(session.id, "two")).result;
    await clock.advance(61_000);
    veil = await startServer({ runtime: h.runtime, secret: TEST_SECRET, port, closeRuntime: false });

    await tab.waitForFunction(() => (window as unknown as { seen: { type: string; content?: string }[] }).seen.some((e) => e.type === "chat.done" && e.content === "second"), undefined, { timeout: 20_000 });
    const { seen, opens } = await tab.evaluate(() => {
      const w = window as unknown as { seen: { id: string; type: string; content?: string }[]; opens: number };
      return { seen: w.seen, opens: w.opens };
    });
    expect(opens).toBe(2);
    // Streaming deltas are live-only (no id: line), so EventSource repeats the previous id on them.
    const ids = seen.filter((e) => !["chat.chunk", "thinking.chunk", "tool.chunk"].includes(e.type)).map((e) => Number(e.id));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(seen.filter((e) => e.type === "chat.message").map((e) => e.content)).toEqual(expect.arrayContaining(["one", "first", "two", "second"]));
  }, 60_000);

  it("veilcli/client runs in the browser: sessions, sync chat and a streamed chat over fetch", async () => {
    const pageOrigin = await startPageServer();
    h = await createRuntimeHarness({ settings: { server: { allowedOrigins: [pageOrigin] } } });
    veil = await startServer({ runtime: h.runtime, secret: TEST_SECRET, port: 0, closeRuntime: false });
    h.llm.enqueue(reply().text("plain").stop(), reply().tool("log_write", { message: "x" }).stop(), reply().text("stre").text("amed").stop());
    const tab = await openBrowser();
    await tab.goto(pageOrigin);
    // A string, so the test runner does not rewrite the page's own import().
    const script = `(async () => {
      const { VeilClient } = await import(location.origin + "/client.js");
      const client = new VeilClient({ baseUrl: ${JSON.stringify(veil.url)}, secret: ${JSON.stringify(TEST_SECRET)} });
      const session = await client.sessions.create({ agent: "default" });
      const sync = await client.chat(session.id, "hi");
      let text = "";
      const types = [];
      for await (const event of client.chatStream(session.id, "go")) {
        types.push(event.type);
        if (event.type === "chat.chunk") text += event.content;
      }
      const missing = await client.sessions.get("sess_nope").catch((e) => ({ status: e.status, code: e.code }));
      return { sync: sync.content, text, types, missing };
    })()`;
    const result = (await tab.evaluate(script)) as { sync: string; text: string; types: string[]; missing: unknown };
    expect(result.sync).toBe("plain");
    expect(result.text).toBe("streamed");
    expect(result.types).toEqual(expect.arrayContaining(["tool.start", "tool.end", "chat.chunk"]));
    expect(result.types.at(-1)).toBe("chat.done");
    expect(result.missing).toEqual({ status: 404, code: "SESSION_NOT_FOUND" });
  }, 60_000);
});

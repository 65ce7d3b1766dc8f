import { afterEach, describe, expect, it } from "vitest";
import { formatThrown } from "../../../src/tools/format.js";
import { EVERYTHING, nodeServer, sourceHarness, TEST_SERVER, type SourceHarness } from "./helpers.js";

let h: SourceHarness;
afterEach(async () => h?.close());

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("MCP servers over stdio", { timeout: 30_000 }, () => {
  it("lists server-everything's tools as mcp__everything__<tool> and maps text and image results", async () => {
    h = sourceHarness({ servers: { everything: nodeServer(EVERYTHING, "stdio") } });
    const tools = await h.tools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["mcp__everything__echo", "mcp__everything__get-sum", "mcp__everything__get-tiny-image"]));
    const echo = tools.find((t) => t.name === "mcp__everything__echo")!;
    expect(echo).toMatchObject({ tier: "custom", description: "Echoes back the input string", source: { scope: "mcp", server: "everything", tool: "echo" } });
    expect(echo.inputSchema).toMatchObject({ type: "object", properties: { message: { type: "string" } } });
    expect(echo.validate({})).toMatch(/missing required field "message"/);

    expect(await h.call("mcp__everything__echo", { message: "hi" })).toMatchObject({ output: "Echo: hi", details: { server: "everything", tool: "echo" } });
    expect((await h.call("mcp__everything__get-sum", { a: 2, b: 3 })).output).toContain("5");
    const image = await h.call("mcp__everything__get-tiny-image");
    expect(image.output).toContain("[image image/png attached]");
    expect(image.attachments).toEqual([{ type: "image", media_type: "image/png", data: expect.stringMatching(/^iVBOR/) }]);
    expect(h.source.broken()).toEqual([]);
  });

  it("starts a server once and shares it: later discoveries and calls reuse the same process", async () => {
    h = sourceHarness({ servers: { t: nodeServer(TEST_SERVER) } });
    const first = (await h.call("mcp__t__pid")).output;
    await h.tools();
    expect((await h.call("mcp__t__pid")).output).toBe(first);
    expect(h.source.servers().map((s) => s.state)).toEqual(["ready"]);
  });

  it("merges the server's env over Veil's environment minus provider keys", async () => {
    h = sourceHarness({
      servers: { everything: { ...nodeServer(EVERYTHING, "stdio"), env: { FROM_ENTRY: "entry-value", SHARED: "entry-wins" } } },
      settings: { providers: { p: { type: "openai", baseUrl: "http://127.0.0.1:1/v1", apiKeyEnv: "MY_PROVIDER_KEY" } } },
      env: { ...process.env, MY_PROVIDER_KEY: "sk-secret", VEIL_API_KEY: "sk-veil", KEEP_ME: "kept", SHARED: "veil" },
    });
    const env = JSON.parse((await h.call("mcp__everything__get-env")).output) as Record<string, string>;
    expect(env).toMatchObject({ FROM_ENTRY: "entry-value", SHARED: "entry-wins", KEEP_ME: "kept" });
    expect(env.MY_PROVIDER_KEY).toBeUndefined();
    expect(env.VEIL_API_KEY).toBeUndefined();
  });

  it("maps isError to an error result", async () => {
    h = sourceHarness({ servers: { t: nodeServer(TEST_SERVER) } });
    expect(await h.call("mcp__t__fail")).toMatchObject({ isError: true, output: 'Error: TOOL_ERROR — MCP tool "fail" of server "t" reported an error: the thing went wrong' });
  });

  it("a server that crashes mid-call gives an error naming it and its stderr, then is restarted", async () => {
    h = sourceHarness({ servers: { t: nodeServer(TEST_SERVER) } });
    const pid = Number((await h.call("mcp__t__pid")).output);
    const crash = await h.tool("mcp__t__crash");
    const error = await crash.execute({}, { signal: new AbortController().signal } as never).then(
      () => null,
      (e: unknown) => formatThrown(e).text,
    );
    expect(error).toMatch(/^Error: TOOL_ERROR — MCP server "t" failed during tools\/call "crash": exited with code 3; stderr: boom: the test server crashes on purpose/);
    expect(alive(pid)).toBe(false);
    // The tools stay known while the server is down; GET /tools shows the error.
    expect((await h.tools()).map((t) => t.name)).toContain("mcp__t__echo");
    // The next call waits out the backoff and runs on a fresh process.
    expect((await h.call("mcp__t__echo", { message: "again" })).output).toBe("echo: again");
    expect(Number((await h.call("mcp__t__pid")).output)).not.toBe(pid);
    expect(h.source.broken()).toEqual([]);
  });

  it("a server that never starts is broken with its error; a command that does not exist too; nothing else breaks", async () => {
    h = sourceHarness({
      servers: {
        missing: { command: "/nonexistent/mcp-server" },
        hangs: { ...nodeServer(TEST_SERVER, "hang-init"), startupTimeoutSeconds: 2 },
        good: nodeServer(TEST_SERVER),
      },
    });
    const names = (await h.tools()).map((t) => t.name);
    expect(names).toContain("mcp__good__echo");
    expect(names.some((n) => n.startsWith("mcp__missing__") || n.startsWith("mcp__hangs__"))).toBe(false);
    const broken = h.source.broken();
    expect(broken).toEqual(
      expect.arrayContaining([
        { scope: "mcp", server: "missing", reason: expect.stringMatching(/^MCP server "missing": could not be started: spawn \/nonexistent\/mcp-server ENOENT/) },
        { scope: "mcp", server: "hangs", reason: 'MCP server "hangs": did not answer initialize within 2 s' },
      ]),
    );
    // A later discovery does not wait for the broken servers again: waiting would take the hanging
    // server's whole 2 s startup timeout, far more than a loaded machine adds to a discovery.
    const started = performance.now();
    await h.tools();
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it("a server flooding stdout with non-JSON is dropped with an error naming it", async () => {
    h = sourceHarness({ servers: { noisy: { ...nodeServer(TEST_SERVER, "flood"), startupTimeoutSeconds: 20 } } });
    expect(await h.tools()).toEqual([]);
    expect(h.source.broken()).toEqual([{ scope: "mcp", server: "noisy", reason: expect.stringMatching(/^MCP server "noisy": flooded stdout with non-JSON output .*first line: "this is not JSON-RPC/) }]);
  });

  it("a banner line on stdout is tolerated (and logged)", async () => {
    h = sourceHarness({ servers: { chatty: nodeServer(TEST_SERVER, "banner") } });
    expect((await h.call("mcp__chatty__echo", { message: "x" })).output).toBe("echo: x");
    expect(h.log.entries.some((e) => e.level === "warn" && e.message.includes('MCP server "chatty" wrote non-JSON to stdout'))).toBe(true);
  });

  it("skips a tool whose schema is not valid JSON Schema and keeps the server's other tools", async () => {
    h = sourceHarness({ servers: { t: nodeServer(TEST_SERVER, "bad-schema") } });
    const names = (await h.tools()).map((t) => t.name);
    expect(names).toContain("mcp__t__echo");
    expect(names).not.toContain("mcp__t__broken_types");
    expect(names).not.toContain("mcp__t__not_object");
    expect(h.source.broken()).toEqual([
      { scope: "mcp", server: "t", tool: "broken_types", reason: expect.stringMatching(/^MCP server "t", tool "broken_types": inputSchema is not a valid JSON Schema: /) },
      { scope: "mcp", server: "t", tool: "not_object", reason: 'MCP server "t", tool "not_object": inputSchema.type must be "object", got "string"' },
    ]);
  });

  it("a tool the entry's touches names says which paths a call writes (so calls on one path run one after another); a field the schema lacks skips the tool", async () => {
    h = sourceHarness({ servers: { t: { ...nodeServer(TEST_SERVER), touches: { echo: ["message"] } }, u: { ...nodeServer(TEST_SERVER), touches: { slow: ["path"] } } } });
    const echo = await h.tool("mcp__t__echo");
    const scope = { workspace: h.ws.root } as never;
    expect(echo.touches?.({ message: "notes.txt" }, scope)).toEqual([h.ws.path("notes.txt")]);
    expect(echo.touches?.({ message: "/tmp/x/../a.txt" }, scope)).toEqual(["/tmp/a.txt"]);
    expect((await h.tool("mcp__t__pid")).touches).toBeUndefined();
    expect((await h.tools()).map((t) => t.name)).not.toContain("mcp__u__slow");
    expect(h.source.broken()).toContainEqual({ scope: "mcp", server: "u", tool: "slow", reason: 'MCP server "u", tool "slow": the server entry\'s "touches" names "path", which the input schema does not have' });
  });

  it("a slow call past callTimeoutSeconds fails with TOOL_TIMEOUT naming the server, and the server stays usable", async () => {
    h = sourceHarness({ servers: { t: { ...nodeServer(TEST_SERVER), callTimeoutSeconds: 0.3 } } });
    const slow = await h.tool("mcp__t__slow");
    const error = await slow.execute({ ms: 5000 }, { signal: new AbortController().signal } as never).then(
      () => null,
      (e: unknown) => formatThrown(e).text,
    );
    expect(error).toBe('Error: TOOL_TIMEOUT — MCP server "t" did not answer tools/call "slow" within 0.3 s');
    expect((await h.call("mcp__t__echo", { message: "still here" })).output).toBe("echo: still here");
  });

  it("a cancelled call rejects at once (the server gets notifications/cancelled) and the server stays usable", async () => {
    h = sourceHarness({ servers: { t: nodeServer(TEST_SERVER) } });
    const slow = await h.tool("mcp__t__slow");
    const controller = new AbortController();
    const pending = slow.execute({ ms: 10_000 }, { signal: controller.signal } as never);
    setTimeout(() => controller.abort(new Error("cancelled by the user")), 100);
    await expect(pending).rejects.toThrow();
    expect((await h.call("mcp__t__echo", { message: "_kept" })).output).toBe("echo: _kept");
  });

  it("shuts every server down when the runtime resources are disposed", async () => {
    h = sourceHarness({ servers: { a: nodeServer(TEST_SERVER), b: nodeServer(TEST_SERVER) } });
    const pids = [Number((await h.call("mcp__a__pid")).output), Number((await h.call("mcp__b__pid")).output)];
    expect(pids.every(alive)).toBe(true);
    await h.resources.dispose();
    expect(pids.some(alive)).toBe(false);
  });
});

/**
 * bash inside the sandbox, with the real bubblewrap: what it can write, what it cannot see,
 * its environment and processes, and the escape corpus. The shell mechanics themselves
 * (cd/export, background shells, daemons dying with the session, the watchdog, ~/.bashrc)
 * are bash.test.ts, kill-shell.test.ts and bash-output.test.ts, which run sandboxed too
 * wherever bwrap works.
 */
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { createServer as createHttpServer } from "node:http";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { bash } from "../../../src/tools/builtin/bash.js";
import { detectSandbox, SANDBOX_SUPPORT_KEY, SandboxProbe } from "../../../src/tools/shared/sandbox/probe.js";
import type { ShellManager } from "../../../src/tools/shared/shell/shell-manager.js";
import { SHELLS_KEY } from "../../../src/tools/shared/shell/shell-manager.js";
import type { memoryLogger } from "../../../src/base/log.js";
import { sandboxHarness, sandboxUnavailable, SECRETS, type SandboxHarness } from "../../helpers/sandbox.js";

let h: SandboxHarness;
afterEach(async () => {
  await h?.close();
});

// These tests are about the real sandbox: a machine without a working bwrap skips them (CI fails, saying why).
const noSandbox = sandboxUnavailable();

const run = (command: string, extra: Record<string, unknown> = {}, toolCallId?: string) => h.call(bash, { command, ...extra }, toolCallId ? { toolCallId } : {});
const everySecret = Object.values(SECRETS);
const leaked = (text: string) => everySecret.filter((secret) => text.includes(secret));

describe.skipIf(noSandbox)("bash in the sandbox: the file system", () => {
  it("runs in bubblewrap, sees its own processes only, and may write the workspace and writeRoots only", async () => {
    h = await sandboxHarness();
    const first = await run("echo hi > made-inside.txt && cat made-inside.txt");
    expect(first.output).toBe("hi");
    expect(first.details?.isolation).toBe("sandbox");
    expect(readFileSync(h.ws.path("made-inside.txt"), "utf8")).toBe("hi\n");

    expect((await run(`echo ok > ${h.dirs.writeRoot}/w.txt && cat ${h.dirs.writeRoot}/w.txt`)).output).toBe("ok");
    expect(readFileSync(join(h.dirs.writeRoot, "w.txt"), "utf8")).toBe("ok\n");

    expect((await run(`cat ${h.dirs.outside}/readable.txt`)).output).toBe("outside-readable");
    const outside = await run(`echo no > ${h.dirs.outside}/w.txt`);
    expect(outside.output).toMatch(/Read-only file system/);
    expect(existsSync(join(h.dirs.outside, "w.txt"))).toBe(false);
    expect((await run("touch /usr/veil-escape")).output).toMatch(/Read-only file system/);

    const processes = await run("ls /proc | grep -E '^[0-9]+$' | wc -l; cat /proc/1/cmdline | tr '\\0' ' '");
    const [count, init] = processes.output.split("\n");
    expect(Number(count)).toBeLessThan(10);
    expect(init).toMatch(/^\S*bwrap /);
    expect((await run(`ls /proc/${process.pid}/ 2>&1 | head -1`)).output).toMatch(/No such file or directory/);
  });

  it("hides the runtime's secrets, $VEIL_HOME and readDeny paths (empty), and keeps .veil's config read-only", async () => {
    h = await sandboxHarness();
    h.ws.write(".veil/agents/default/agent.json", "{}");
    const veilDb = h.ws.path(".veil/veil.db");
    expect(existsSync(veilDb)).toBe(true);
    const result = await run(
      [
        "for f in .veil/secret .veil/settings.json .veil/keys.json .veil/veil.db .veil/veil.db-wal .veil/veil.db-shm; do [ -e $f ] && printf '%s=%s\\n' $f $(wc -c < $f); done",
        `ls -A ${h.dirs.veilHome} | wc -l`,
        `ls -A ${h.dirs.denied} | wc -l`,
        `cat ${h.dirs.denied}/denied.txt ${h.dirs.veilHome}/settings.json .veil/secret 2>&1`,
      ].join("; "),
    );
    expect(leaked(result.output)).toEqual([]);
    const sizes = result.output.split("\n").filter((line) => line.startsWith(".veil/"));
    expect(sizes.length).toBeGreaterThanOrEqual(4);
    for (const line of sizes) expect(line).toMatch(/=0$/);
    expect(result.output).toMatch(/^0\n0$/m);
    const write = await run(`echo x > .veil/agents/default/agent.json; echo x > ${h.dirs.veilHome}/new; echo x > .veil/secret`);
    expect(write.output.match(/Read-only file system/g)?.length).toBe(3);
    expect(readFileSync(h.ws.path(".veil/agents/default/agent.json"), "utf8")).toBe("{}");
    expect(readFileSync(h.ws.path(".veil/secret"), "utf8")).toBe(SECRETS.file);
    expect((await run("mkdir -p .veil/memory && echo note > .veil/memory/n.md && cat .veil/memory/n.md")).output).toBe("note");
  });

  it("gives the session a private $HOME (seeded from $VEIL_HOME/sandbox-home) and a private /tmp, shared by its shells", async () => {
    h = await sandboxHarness();
    const seed = join(h.dirs.veilHome, "sandbox-home");
    mkdirSync(seed, { recursive: true });
    writeFileSync(join(seed, ".bashrc"), "alias seeded='echo seeded-rc'\n");
    const marker = `veil-tmp-${randomBytes(4).toString("hex")}`;
    const fg = await run(`echo $HOME; ls -A ~; seeded; echo from-fg > /tmp/${marker}; ls /tmp | grep -c .`);
    const [home, listing, seeded] = fg.output.split("\n");
    expect(home).not.toBe(h.dirs.home);
    expect(home).toBe(await (h.sessionResources.peek<ShellManager>(SHELLS_KEY)!).sandboxHome());
    expect(listing).toBe(".bashrc");
    expect(seeded).toBe("seeded-rc");
    expect(existsSync(`/tmp/${marker}`)).toBe(false);
    const bg = await run(`cat /tmp/${marker}; echo $HOME`, { run_in_background: true });
    const shell = h.sessionResources.peek<ShellManager>(SHELLS_KEY)!.background(JSON.parse(bg.output).shell_id)!;
    await shell.settled;
    expect(shell.poll().output).toBe(`from-fg\n${home}\n`);
  });
});

describe.skipIf(noSandbox)("bash in the sandbox: the environment", () => {
  it("holds only envPass, the agent's env and what Veil sets: no provider key, runtime secret or database URL", async () => {
    h = await sandboxHarness();
    const result = await run("env; echo ---; tr '\\0' '\\n' < /proc/self/environ; echo ---; tr '\\0' '\\n' < /proc/1/environ; echo ---; set");
    expect(leaked(result.output)).toEqual([]);
    const names = result.output.split("---")[0]!.split("\n").filter(Boolean).map((line) => line.split("=")[0]);
    const allowed = new Set(["PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME", "HOME", "AGENT_VAR", "PWD", "OLDPWD", "SHLVL", "_", "VEIL_SHELL_TAG", "GIT_TERMINAL_PROMPT", "GIT_PAGER", "PAGER", "MANPAGER", "SYSTEMD_PAGER", "GIT_EDITOR", "GIT_SSH_COMMAND", "DEBIAN_FRONTEND", "PIP_NO_INPUT", "PYTHONUNBUFFERED", "NO_COLOR"]);
    expect(names.filter((name) => !allowed.has(name!))).toEqual([]);
    expect(result.output).toContain("AGENT_VAR=from-agent");
    expect(result.output).not.toMatch(/^OPENAI_API_KEY=/m);
  });
});

describe.skipIf(noSandbox)("bash in the sandbox: the escape corpus", () => {
  it("gets nothing through /proc of the server, links, .., /dev/shm, unshare, nsenter, mount or the database", async () => {
    h = await sandboxHarness();
    h.ws.write("sub/deeper/file.txt", "x");
    symlinkSync(h.ws.path(".veil/secret"), h.ws.path("secret-link"));
    symlinkSync(join(h.dirs.denied, "denied.txt"), h.ws.path("denied-link"));
    symlinkSync(h.dirs.veilHome, h.ws.path("home-link"));
    const shm = `veil-escape-${randomBytes(4).toString("hex")}`;
    const pid = process.pid;
    const corpus = [
      `cat /proc/${pid}/environ`,
      `cat /proc/${pid}/cmdline`,
      `ls -l /proc/${pid}/cwd /proc/${pid}/root /proc/${pid}/fd`,
      `cat /proc/${pid}/root${h.ws.path(".veil/secret")}`,
      `cat /proc/${process.ppid}/environ`,
      "for p in /proc/[0-9]*; do cat $p/environ; cat $p/root" + h.ws.path(".veil/secret") + "; done",
      "cat secret-link denied-link home-link/settings.json",
      "cd sub/deeper && cat ../../.veil/secret ../../../" + h.ws.root.split("/").pop() + "/.veil/secret",
      `cat ${h.ws.path("sub/../.veil/secret")} ${h.dirs.outside}/../denied/denied.txt`,
      `echo escaped > /dev/shm/${shm}`,
      "unshare -r id",
      "unshare -m true",
      "unshare -U -r cat /proc/self/uid_map",
      `nsenter -t 1 -m cat ${h.ws.path(".veil/secret")}`,
      "nsenter -t 1 -U -m true",
      `umount ${h.ws.path(".veil/secret")}`,
      `mount --bind / /mnt`,
      `mount -o remount,rw /`,
      "strings .veil/veil.db | head; cat .veil/veil.db-wal | head -c 2000",
      `cp .veil/secret ${h.dirs.writeRoot}/stolen; cat ${h.dirs.writeRoot}/stolen`,
      `ln .veil/secret hard-link && cat hard-link`,
      "env; cat /proc/self/environ /proc/1/environ",
    ];
    for (const command of corpus) {
      const result = await run(`cd ${h.ws.root} && { ${command}; } 2>&1; true`);
      if (process.env.VEIL_SHOW_CORPUS) console.log(`$ ${command}\n${result.output}\n`);
      expect(leaked(result.output), command).toEqual([]);
    }
    expect(existsSync(`/dev/shm/${shm}`)).toBe(false);
    const unshare = await run("unshare -r id");
    expect(unshare.output).toMatch(/unshare failed|Operation not permitted|No space left/);
    const remount = await run("mount -o remount,rw / && touch /usr/escaped");
    expect(remount.success).toBe(false);
    expect(existsSync("/usr/escaped")).toBe(false);
  });
});

describe.skipIf(noSandbox)("bash in the sandbox: the network", () => {
  it("none: no network at all, not even the host's loopback", async () => {
    const server = createServer((socket) => socket.end("hello\n"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    try {
      h = await sandboxHarness({ sandbox: { network: "full" } });
      expect((await run(`exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3`)).output).toBe("hello");
      await h.close();
      h = await sandboxHarness({ sandbox: { network: "none" } });
      const none = await run(`exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3; ip -o link 2>/dev/null | wc -l; cat /proc/net/dev | tail -n +3 | cut -d: -f1`);
      expect(none.output).toMatch(/Connection refused/);
      expect(none.output).not.toContain("hello");
      expect(none.output.trim().split("\n").pop()!.trim()).toBe("lo");
    } finally {
      server.close();
    }
  });
});

describe.skipIf(noSandbox)("bash in the sandbox: the allowlist network", () => {
  it("lets allowed hosts through Veil's proxy (HTTP and CONNECT), refuses others with 403 and sandbox.blocked, and fails direct connections", async () => {
    const upstream = createHttpServer((_req, res) => res.end("upstream-ok"));
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    const port = (upstream.address() as { port: number }).port;
    try {
      h = await sandboxHarness({ sandbox: { network: "allowlist", allowHosts: ["127.0.0.1", "*.allowed.test"] } });
      const proxies = await run("env | grep -i _proxy= | sort");
      expect(proxies.output).toBe(["HTTPS_PROXY", "HTTP_PROXY", "http_proxy", "https_proxy"].map((name) => `${name}=http://127.0.0.1:3128`).sort().join("\n"));
      expect((await run(`curl -s http://127.0.0.1:${port}/`)).output).toBe("upstream-ok");
      expect((await run(`curl -s -p http://127.0.0.1:${port}/`)).output).toBe("upstream-ok");

      const blocked = await run("curl -s -o /dev/null -w '%{http_code}' http://blocked.test:81/x", {}, "call_blocked_http");
      expect(blocked.output).toBe("403");
      const tunnel = await run("curl -sS https://blocked.test/ 2>&1", {}, "call_blocked_connect");
      expect(tunnel.output).toMatch(/403/);
      await expect.poll(() => h.events.filter((event) => event.type === "sandbox.blocked").map(({ toolCallId, host, port: p }) => ({ toolCallId, host, port: p }))).toEqual([
        { toolCallId: "call_blocked_http", host: "blocked.test", port: 81 },
        { toolCallId: "call_blocked_connect", host: "blocked.test", port: 443 },
      ]);

      const direct = await run(`curl -sS --noproxy '*' http://127.0.0.1:${port}/ 2>&1; exec 3<>/dev/tcp/127.0.0.1/${port}`);
      expect(direct.output).not.toContain("upstream-ok");
      expect(direct.output).toMatch(/Connection refused|Failed to connect/);

      const bg = await run(`curl -s http://127.0.0.1:${port}/; curl -s -o /dev/null -w ' %{http_code}' http://other.test/`, { run_in_background: true }, "call_background");
      const shell = h.sessionResources.peek<ShellManager>(SHELLS_KEY)!.background(JSON.parse(bg.output).shell_id)!;
      await shell.settled;
      expect(shell.poll().output).toBe("upstream-ok 403");
      await expect.poll(() => h.events.filter((event) => event.type === "sandbox.blocked").length).toBe(3);
      expect(h.events.filter((event) => event.type === "sandbox.blocked")[2]).toMatchObject({ toolCallId: "call_background", host: "other.test", port: 80, sessionId: h.sessionId });
    } finally {
      upstream.close();
    }
  });
});

describe("bash without a sandbox", () => {
  const noBwrap = () => new SandboxProbe(() => detectSandbox("linux", "/nonexistent"), async () => detectSandbox("linux", "/nonexistent"));

  it("required: refuses with SANDBOX_UNAVAILABLE and runs nothing", async () => {
    h = await sandboxHarness({ sandbox: { mode: "required" } });
    h.runtimeResources.get(SANDBOX_SUPPORT_KEY, noBwrap);
    const result = await run("touch ran.txt");
    expect(result.output).toMatch(/^Error: SANDBOX_UNAVAILABLE — sandbox\.mode is "required" and bubblewrap \(bwrap\) is not on PATH/);
    expect(existsSync(h.ws.path("ran.txt"))).toBe(false);
  });

  it("auto: runs as before and warns once", async () => {
    h = await sandboxHarness({ sandbox: { mode: "auto" } });
    h.runtimeResources.get(SANDBOX_SUPPORT_KEY, noBwrap);
    const first = await run("echo $AGENT_VAR");
    expect(first.output).toBe("from-agent");
    expect(first.details?.isolation).not.toBe("sandbox");
    await run("true");
    const log = h.ctx().log as ReturnType<typeof memoryLogger>;
    expect(log.entries.filter((entry) => entry.level === "warn" && entry.message.includes("without a sandbox"))).toHaveLength(1);
  });

  it.skipIf(noSandbox)("an agent cannot turn the sandbox off", async () => {
    h = await sandboxHarness({ sandbox: { mode: "auto" }, agent: { sandbox: { mode: "off" } } });
    expect((await run("true")).details?.isolation).toBe("sandbox");
  });
});

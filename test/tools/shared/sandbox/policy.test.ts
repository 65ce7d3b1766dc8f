import { describe, expect, it } from "vitest";
import { defaultSandbox } from "../../../../src/config/defaults.js";
import type { SandboxSettings } from "../../../../src/config/types.js";
import { effectiveSandbox, hostAllowed } from "../../../../src/tools/shared/sandbox/policy.js";
import { parseAuthority } from "../../../../src/tools/shared/sandbox/proxy.js";
import { sandboxEnv } from "../../../../src/tools/shared/sandbox/environment.js";

const settings = (over: Partial<SandboxSettings> = {}): SandboxSettings => ({ ...defaultSandbox(), ...over });

describe("an agent's sandbox narrows the settings, never widens them", () => {
  it("keeps the settings when the agent says nothing", () => {
    expect(effectiveSandbox(settings({ network: "allowlist", allowHosts: ["a.com"] }), undefined)).toEqual(settings({ network: "allowlist", allowHosts: ["a.com"] }));
    expect(effectiveSandbox(settings({ network: "allowlist", allowHosts: ["a.com"] }), {})).toEqual(settings({ network: "allowlist", allowHosts: ["a.com"] }));
  });

  it("takes the stricter mode: off < auto < required", () => {
    expect(effectiveSandbox(settings({ mode: "auto" }), { mode: "off" }).mode).toBe("auto");
    expect(effectiveSandbox(settings({ mode: "required" }), { mode: "auto" }).mode).toBe("required");
    expect(effectiveSandbox(settings({ mode: "off" }), { mode: "required" }).mode).toBe("required");
    expect(effectiveSandbox(settings({ mode: "off" }), { mode: "auto" }).mode).toBe("auto");
  });

  it("takes the narrower network: full > allowlist > none", () => {
    expect(effectiveSandbox(settings({ network: "none" }), { network: "full" }).network).toBe("none");
    expect(effectiveSandbox(settings({ network: "allowlist", allowHosts: ["a.com"] }), { network: "full" })).toMatchObject({ network: "allowlist", allowHosts: ["a.com"] });
    expect(effectiveSandbox(settings({ network: "full" }), { network: "allowlist", allowHosts: ["x.org"] })).toMatchObject({ network: "allowlist", allowHosts: ["x.org"] });
    expect(effectiveSandbox(settings({ network: "allowlist", allowHosts: ["a.com"] }), { network: "none" }).network).toBe("none");
  });

  it("allows only the hosts both allow", () => {
    const base = settings({ network: "allowlist", allowHosts: ["*.example.com", "registry.npmjs.org"] });
    expect(effectiveSandbox(base, { allowHosts: ["api.example.com", "evil.com", "registry.npmjs.org"] }).allowHosts).toEqual(["api.example.com", "registry.npmjs.org"]);
    expect(effectiveSandbox(base, { allowHosts: ["*.deep.example.com"] }).allowHosts).toEqual(["*.deep.example.com"]);
    expect(effectiveSandbox(settings({ network: "allowlist", allowHosts: ["api.example.com"] }), { allowHosts: ["*.example.com"] }).allowHosts).toEqual(["api.example.com"]);
    // "*.example.com" does not contain example.com itself, nor the other way round.
    expect(effectiveSandbox(settings({ network: "allowlist", allowHosts: ["example.com"] }), { allowHosts: ["*.example.com"] }).allowHosts).toEqual([]);
    expect(effectiveSandbox(base, { network: "allowlist" }).allowHosts).toEqual([]);
  });

  it("hides what either hides and passes only what both pass", () => {
    const base = settings({ readDeny: ["~/.ssh"], envPass: ["PATH", "LANG", "TERM"] });
    const narrowed = effectiveSandbox(base, { readDeny: ["/srv/private", "~/.ssh"], envPass: ["PATH", "SECRET_TOKEN"] });
    expect(narrowed.readDeny).toEqual(["~/.ssh", "/srv/private"]);
    expect(narrowed.envPass).toEqual(["PATH"]);
  });
});

describe("allowlist entries", () => {
  it("match exact names (any case, trailing dot) and *. suffixes below the name only", () => {
    const list = ["registry.npmjs.org", "*.example.com", "127.0.0.1", "[::1]"];
    expect(hostAllowed("registry.npmjs.org", list)).toBe(true);
    expect(hostAllowed("REGISTRY.npmjs.org.", list)).toBe(true);
    expect(hostAllowed("evil-registry.npmjs.org", list)).toBe(false);
    expect(hostAllowed("api.example.com", list)).toBe(true);
    expect(hostAllowed("a.b.example.com", list)).toBe(true);
    expect(hostAllowed("example.com", list)).toBe(false);
    expect(hostAllowed("badexample.com", list)).toBe(false);
    expect(hostAllowed("example.com.evil.net", list)).toBe(false);
    expect(hostAllowed("127.0.0.1", list)).toBe(true);
    expect(hostAllowed("::1", list)).toBe(true);
    expect(hostAllowed("2130706433", list)).toBe(false);
  });

  it("parse CONNECT targets, IPv6 in brackets, and refuse anything else", () => {
    expect(parseAuthority("example.com:443")).toEqual({ host: "example.com", port: 443 });
    expect(parseAuthority("[::1]:8080")).toEqual({ host: "::1", port: 8080 });
    expect(parseAuthority("example.com")).toBeNull();
    expect(parseAuthority("example.com:99999")).toBeNull();
    expect(parseAuthority("a:b:c")).toBeNull();
  });
});

describe("the sandbox's environment", () => {
  it("holds only envPass, the agent's env and what Veil sets; never a runtime secret or provider key", () => {
    const env = sandboxEnv({
      base: { PATH: "/usr/bin", LANG: "C.UTF-8", OPENAI_API_KEY: "sk-live", VEIL_SECRET: "s", VEIL_DATABASE_URL: "postgres://x", OTHER: "o" },
      envPass: ["PATH", "LANG", "OPENAI_API_KEY", "VEIL_SECRET", "VEIL_DATABASE_URL"],
      agentEnv: { PROJECT: "p" },
      secretNames: ["OPENAI_API_KEY"],
      home: "/tmp/h",
      proxy: true,
    });
    expect(env).toEqual({
      PATH: "/usr/bin",
      LANG: "C.UTF-8",
      PROJECT: "p",
      HOME: "/tmp/h",
      HTTP_PROXY: "http://127.0.0.1:3128",
      HTTPS_PROXY: "http://127.0.0.1:3128",
      http_proxy: "http://127.0.0.1:3128",
      https_proxy: "http://127.0.0.1:3128",
    });
  });
});

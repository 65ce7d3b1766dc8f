/** The top bar's word on the sandbox (GET /health): whether bash and custom tools run in one. */
import type { Api } from "./api.js";
import { h } from "./dom.js";

interface SandboxHealth {
  mode: "auto" | "required" | "off";
  active: boolean;
  backend: string | null;
}

/** `sandboxed (bubblewrap)`, `no sandbox (off)`, `no sandbox (unavailable)`, or, for "required" without one, a warning. */
export function describeSandbox(sandbox: SandboxHealth): { text: string; tone: "ok" | "off" | "warn"; title: string } {
  if (sandbox.active) return { text: `sandboxed (${sandbox.backend})`, tone: "ok", title: `bash and custom tools run in a ${sandbox.backend} sandbox (sandbox.mode "${sandbox.mode}")` };
  if (sandbox.mode === "off") return { text: "no sandbox (off)", tone: "off", title: 'sandbox.mode is "off": bash and custom tools run as the server user' };
  if (sandbox.mode === "required") return { text: "sandbox required: unavailable", tone: "warn", title: "sandbox.mode is \"required\" but this machine cannot make a sandbox: bash and custom tool calls are refused" };
  return { text: "no sandbox (unavailable)", tone: "warn", title: "sandbox.mode is \"auto\" but this machine cannot make a sandbox (install bubblewrap): bash and custom tools run as the server user" };
}

export function sandboxBadge(api: Api): HTMLElement {
  const el = h("span", { testid: "sandbox-status", class: "badge sandbox", role: "status", "aria-label": "Sandbox" }, "sandbox…");
  void api
    .get<{ sandbox?: SandboxHealth }>("/health")
    .then(({ sandbox }) => {
      if (!sandbox) return el.remove();
      const shown = describeSandbox(sandbox);
      el.textContent = shown.text;
      el.title = shown.title;
      el.className = `badge sandbox ${shown.tone}`;
    })
    .catch(() => el.remove());
  return el;
}

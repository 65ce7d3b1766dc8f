/**
 * The dashboard's side of approvals and the sandbox: a `tool_approval` shows the tool and
 * its input with Approve / Deny (a reason goes to the model), and the top bar says whether
 * bash and custom tools run sandboxed (GET /health).
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { reply } from "../helpers/fake-llm.js";
import { CHROMIUM, closePages, errorsOf, MAIN, poll, startHarness, type Harness } from "./harness.js";
import { detectSandbox } from "../../src/tools/shared/sandbox/probe.js";

const ready = existsSync(MAIN) && existsSync(CHROMIUM);

let h: Harness;
beforeAll(async () => {
  // $VEIL_HOME/settings.json (the harness's is the workspace's "home"): merged under the project's.
  h = await startHarness({ "home/settings.json": JSON.stringify({ approval: { tools: ["write_file", "bash"] } }) });
}, 60_000);
afterAll(async () => {
  await closePages(h);
  await h?.close();
});

async function startTurn(page: Page, text: string): Promise<void> {
  await page.getByTestId("new-session").click();
  await poll(() => page.locator("[data-testid=session-item].selected").count()).toBe(1);
  await page.getByTestId("chat-input").fill(text);
  await page.getByTestId("chat-send").click();
}

describe.skipIf(!ready)("dashboard: approvals and the sandbox", { timeout: 90_000 }, () => {
  it("shows the sandbox in the top bar", async () => {
    const page = await h.signedIn();
    const badge = page.getByTestId("sandbox-status");
    const expected = detectSandbox().available ? "sandboxed (bubblewrap)" : "no sandbox (unavailable)";
    await poll(() => badge.textContent()).toBe(expected);
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });

  it("asks Approve / Deny with the call's input; Approve runs it, Deny answers the model with the reason", async () => {
    const page = await h.signedIn();
    h.llm.enqueue(reply().tool("write_file", { file: "from-dashboard.txt", content: "approved" }).stop());
    h.llm.enqueue(reply().tool("bash", { command: "touch denied-by-dashboard" }).stop());
    h.llm.enqueue(reply().text("Both asked.").stop());
    await startTurn(page, "write and run");

    const dialog = page.locator("[data-testid=remote-dialog][data-method=tool_approval]");
    await dialog.waitFor();
    expect(await dialog.locator("h2").textContent()).toContain("Run write_file?");
    expect(JSON.parse((await dialog.getByTestId("approval-input").textContent())!)).toEqual({ file: "from-dashboard.txt", content: "approved" });
    await dialog.getByTestId("approval-approve").click();
    await poll(() => existsSync(h.ws.path("from-dashboard.txt"))).toBe(true);

    await poll(() => dialog.locator("h2").textContent()).toContain("Run bash?");
    expect(JSON.parse((await dialog.getByTestId("approval-input").textContent())!)).toEqual({ command: "touch denied-by-dashboard" });
    await dialog.getByTestId("approval-reason").fill("not on a Friday");
    await dialog.getByTestId("approval-deny").click();
    await dialog.waitFor({ state: "detached" });
    const bashCall = page.locator("[data-testid=tool-call][data-tool-name=bash]");
    await poll(() => bashCall.getByTestId("tool-output").textContent()).toBe("Error: DENIED — not on a Friday");
    expect(existsSync(h.ws.path("denied-by-dashboard"))).toBe(false);
    await poll(() => page.locator("[data-testid=message][data-role=assistant]").last().textContent()).toBe("Both asked.");
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });
});

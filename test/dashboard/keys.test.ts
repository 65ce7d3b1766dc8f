import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM, closePages, errorsOf, MAIN, poll, SECRET, signIn, startHarness, watchErrors, type Harness } from "./harness.js";

const ready = existsSync(MAIN) && existsSync(CHROMIUM);

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
}, 60_000);
afterAll(async () => {
  await closePages(h);
  await h?.close();
});

const api = (path: string, init: RequestInit = {}, secret = SECRET) =>
  fetch(`${h.server.url}${path}`, { ...init, headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", ...(init.headers as Record<string, string>) } });

describe.skipIf(!ready)("dashboard: API keys", { timeout: 90_000 }, () => {
  it("a key logs in and sees only its own sessions, without the keys page; the admin's page lists, creates and revokes keys and shows the audit", async () => {
    const created = (await (await api("/keys", { method: "POST", body: JSON.stringify({ name: "tester", scopes: ["chat"], budgetUsd: 2 }) })).json()) as { id: string; key: string };
    const own = (await (await api("/sessions", { method: "POST", body: "{}" }, created.key)).json()) as { id: string };
    const others = (await (await api("/sessions", { method: "POST", body: "{}" })).json()) as { id: string };

    const keyPage = await h.context.newPage();
    watchErrors(keyPage);
    await keyPage.goto(`${h.server.url}/`);
    const keysProbe = keyPage.waitForResponse((response) => new URL(response.url()).pathname === "/keys");
    await signIn(keyPage, created.key);
    const items = keyPage.getByTestId("session-list").getByTestId("session-item");
    await poll(() => items.count()).toBe(1);
    expect(await items.first().getAttribute("data-session-id")).toBe(own.id);
    expect(await keyPage.locator(`[data-session-id="${others.id}"]`).count()).toBe(0);
    // The keys page is the admin's: its button never shows for a chat key.
    expect((await keysProbe).status()).toBe(403);
    expect(await keyPage.getByTestId("admin-open").isVisible()).toBe(false);

    const adminPage = await h.signedIn();
    await poll(() => adminPage.getByTestId("admin-open").isVisible()).toBe(true);
    await adminPage.getByTestId("admin-open").click();
    const row = adminPage.locator(`[data-testid=key-row][data-key-id="${created.id}"]`);
    await row.waitFor();
    expect(await row.getAttribute("data-state")).toBe("active");
    expect(await row.locator(".key-spend").textContent()).toBe("$0.0000 / $2.0000");

    await adminPage.getByTestId("key-create-name").fill("from the page");
    await adminPage.getByTestId("key-create-scopes").selectOption("read");
    await adminPage.getByTestId("key-create-rpm").fill("10");
    await adminPage.getByTestId("key-create-submit").click();
    const value = (await adminPage.getByTestId("key-created-value").textContent())!;
    expect(value).toMatch(/^veil_sk_/);
    expect((await api("/sessions", {}, value)).status).toBe(200);
    await poll(() => adminPage.getByTestId("key-row").count()).toBe(2);

    await row.getByTestId("key-revoke").click();
    await poll(() => row.getAttribute("data-state")).toBe("revoked");
    // The key's own tab is sent back to the login form at its next request.
    await keyPage.getByTestId("new-session").click();
    await poll(() => keyPage.getByTestId("login-secret").isVisible()).toBe(true);

    const audit = adminPage.getByTestId("audit-list").getByTestId("audit-entry");
    await poll(async () => (await audit.allTextContents()).join("\n")).toMatch(new RegExp(`admin DELETE /keys/${created.id} → 200`));
    expect((await audit.allTextContents()).join("\n")).toMatch(new RegExp(`${created.id} POST /sessions → 201 \\(${own.id}\\)`));
    expect(errorsOf(adminPage)).toEqual([]);
    expect(errorsOf(keyPage)).toEqual([]);
    await keyPage.close();
    await adminPage.close();
  });
});

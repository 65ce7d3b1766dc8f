import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { reply } from "../helpers/fake-llm.js";
import { CHROMIUM, closePages, errorsOf, MAIN, poll, SECRET, startHarness, type Harness } from "./harness.js";

const ready = existsSync(MAIN) && existsSync(CHROMIUM);
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
}, 60_000);
afterEach(async () => {
  await closePages(h);
});
afterAll(async () => {
  await h?.close();
});

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${h.server.url}${path}`, { ...init, headers: { authorization: `Bearer ${SECRET}`, "content-type": "application/json", ...(init.headers as Record<string, string>) } }).then((r) => r.json() as Promise<any>);

describe.skipIf(!ready)("dashboard: schedules and their runs", { timeout: 60_000 }, () => {
  it("lists the schedules with their runs, opens a run's session, and disables a schedule", async () => {
    h.llm.respond(() => reply().text("nightly report done").stop());
    const every = await api("/schedules", { method: "POST", body: JSON.stringify({ agent: "default", prompt: "write the nightly report", everySeconds: 1 }) });
    const weekly = await api("/schedules", { method: "POST", body: JSON.stringify({ agent: "default", prompt: "weekly summary", cron: "0 9 * * MON", enabled: false }) });
    const page = await h.signedIn();
    await page.getByTestId("schedules-open").click();
    const item = (id: string) => page.locator(`[data-testid=schedule-item][data-schedule-id="${id}"]`);
    await poll(() => page.getByTestId("schedule-item").count()).toBe(2);
    expect(await item(every.id).getAttribute("data-enabled")).toBe("true");
    expect(await item(weekly.id).getAttribute("data-enabled")).toBe("false");
    expect(await item(weekly.id).textContent()).toContain("cron 0 9 * * MON (UTC)");
    expect(await item(weekly.id).textContent()).toContain("disabled");
    expect(await item(every.id).textContent()).toContain("write the nightly report");

    // Runs appear as they happen (the list is read again while it is open).
    const okRun = item(every.id).locator("[data-testid=schedule-run][data-status=ok]").first();
    await okRun.waitFor();
    const sessionId = (await okRun.getAttribute("data-session-id"))!;
    expect(sessionId).toMatch(/^sess_/);
    await okRun.getByRole("button").click();
    expect(await page.locator(".schedules-layer").isHidden()).toBe(true);
    await poll(() => page.locator("[data-testid=session-item].selected").getAttribute("data-session-id")).toBe(sessionId);
    await poll(() => page.locator("[data-testid=message][data-role=user]").first().textContent()).toBe("write the nightly report");
    await poll(() => page.locator("[data-testid=message][data-role=assistant]").first().textContent()).toContain("nightly report done");

    await page.getByTestId("schedules-open").click();
    await item(every.id).getByTestId("schedule-toggle").click();
    await poll(() => item(every.id).getAttribute("data-enabled")).toBe("false");
    expect((await api(`/schedules/${every.id}`)).enabled).toBe(false);
    await item(weekly.id).getByTestId("schedule-toggle").click();
    await poll(() => item(weekly.id).getAttribute("data-enabled")).toBe("true");
    await page.keyboard.press("Escape");
    expect(await page.locator(".schedules-layer").isHidden()).toBe(true);
    expect(errorsOf(page)).toEqual([]);
    h.llm.respond(null);
  });
});

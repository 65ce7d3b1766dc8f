import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import type { Page } from "playwright-core";
import { reply } from "../helpers/fake-llm.js";
import { CHROMIUM, closePages, errorsOf, MAIN, poll, SECRET, signIn, startHarness, watchErrors, type Harness } from "./harness.js";

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

type Row = { id: string; title: string | null; status: string };
async function api<T = Row>(path: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(`${h.server.url}${path}`, { ...init, headers: { authorization: `Bearer ${SECRET}`, "content-type": "application/json", ...(init.headers as Record<string, string>) } });
  return (await res.json()) as T;
}

const selectedId = (page: Page) => page.locator("[data-testid=session-item].selected").getAttribute("data-session-id");
const item = (page: Page, id: string) => page.locator(`[data-testid=session-item][data-session-id="${id}"]`);
const hashOf = (page: Page) => new URL(page.url()).hash;

async function newSession(page: Page): Promise<string> {
  const before = await page.getByTestId("session-item").count();
  await page.getByTestId("new-session").click();
  await poll(() => page.getByTestId("session-item").count()).toBe(before + 1);
  return (await selectedId(page))!;
}

describe.skipIf(!ready)("the dashboard's sessions: addresses, titles, search", { timeout: 60_000 }, () => {
  it("each session has its own address (#/sessions/<id>): kept on reload, followed by Back, opened from a link after signing in", async () => {
    const page = await h.signedIn();
    const first = await newSession(page);
    expect(hashOf(page)).toBe(`#/sessions/${first}`);
    h.llm.enqueue(reply().text("Noted.").stop());
    await page.getByTestId("chat-input").fill("Plan the 0.2 release\nwith a changelog");
    await page.getByTestId("chat-send").click();
    // The first message names the session, in the list and in the header.
    await poll(() => item(page, first).locator(".row-name").textContent()).toBe("Plan the 0.2 release with a changelog");
    await poll(() => page.getByTestId("session-title").textContent()).toBe("Plan the 0.2 release with a changelog");

    const second = await newSession(page);
    expect(hashOf(page)).toBe(`#/sessions/${second}`);
    await page.reload();
    await page.getByTestId("connection-status").filter({ hasText: /^\s*live\s*$/ }).waitFor();
    await poll(() => selectedId(page)).toBe(second);
    expect(hashOf(page)).toBe(`#/sessions/${second}`);

    await page.goBack();
    await poll(() => selectedId(page)).toBe(first);
    await poll(() => page.getByTestId("session-title").textContent()).toBe("Plan the 0.2 release with a changelog");
    await poll(() => page.locator("[data-testid=message][data-role=assistant]").last().textContent()).toBe("Noted.");

    // A link into a fresh tab: the secret is per tab, so it signs in first, then opens the session.
    const linked = await h.context.newPage();
    watchErrors(linked);
    await linked.goto(`${h.server.url}/#/sessions/${first}`);
    await signIn(linked);
    await poll(() => selectedId(linked)).toBe(first);
    expect(errorsOf(page)).toEqual([]);
    expect(errorsOf(linked)).toEqual([]);
  });

  it("a closed session named by the address opens although the list hides it; an unknown one says so", async () => {
    const closed = await api("/sessions", { method: "POST", body: JSON.stringify({ title: "Old investigation" }) });
    await api(`/sessions/${closed.id}`, { method: "DELETE" });
    const page = await h.context.newPage();
    watchErrors(page);
    await page.goto(`${h.server.url}/#/sessions/${closed.id}`);
    await signIn(page);
    await poll(() => page.getByTestId("session-title").textContent()).toBe("Old investigation");
    expect(await item(page, closed.id).count()).toBe(0);
    expect(await page.getByTestId("chat-input").isDisabled()).toBe(true);

    await page.evaluate(() => (location.hash = "#/sessions/sess_nothing_here"));
    await poll(() => page.locator(".session-head").textContent()).toContain("No session sess_nothing_here on this server.");
    expect(errorsOf(page)).toEqual([]);
  });

  it("the search box narrows the list (titles, ids, agents); Rename in the header sets the title everywhere", async () => {
    const deploy = await api("/sessions", { method: "POST", body: JSON.stringify({ title: "Deploy the staging cluster" }) });
    const notes = await api("/sessions", { method: "POST", body: JSON.stringify({ title: "Write the release notes" }) });
    const page = await h.signedIn();
    await poll(() => item(page, notes.id).count()).toBe(1);
    // Most recently active first.
    const order = await page.locator("[data-testid=session-list] > [data-testid=session-item]").evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.sessionId));
    expect(order.indexOf(notes.id)).toBeLessThan(order.indexOf(deploy.id));

    await page.getByTestId("session-search").fill("STAGING");
    await poll(() => page.getByTestId("session-item").evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.sessionId))).toEqual([deploy.id]);
    await page.getByTestId("session-search").fill("no-such-session");
    await poll(() => page.locator(".session-list .empty").textContent()).toBe("No session matches “no-such-session”.");
    await page.getByTestId("session-search").fill("");
    await poll(() => item(page, notes.id).count()).toBe(1);

    await item(page, deploy.id).locator(".session-row").click();
    await poll(() => page.getByTestId("session-title").textContent()).toBe("Deploy the staging cluster");
    await page.getByTestId("session-rename").click();
    const input = page.getByTestId("session-title-input");
    await input.fill("Deploy production");
    await input.press("Enter");
    await poll(() => page.getByTestId("session-title").textContent()).toBe("Deploy production");
    await poll(() => item(page, deploy.id).locator(".row-name").textContent()).toBe("Deploy production");
    expect((await api(`/sessions/${deploy.id}`)).title).toBe("Deploy production");
    // Another tab hears of the rename on its stream.
    const other = await h.signedIn();
    await poll(() => item(other, deploy.id).locator(".row-name").textContent()).toBe("Deploy production");
    await api(`/sessions/${deploy.id}`, { method: "PATCH", body: JSON.stringify({ title: "Deploy production, take two" }) });
    await poll(() => item(other, deploy.id).locator(".row-name").textContent()).toBe("Deploy production, take two");
    expect(errorsOf(page)).toEqual([]);
  });
});

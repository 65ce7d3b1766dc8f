import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { hang, reply } from "../helpers/fake-llm.js";
import { CHROMIUM, closePages, errorsOf, MAIN, poll, SECRET, startHarness, type Harness } from "./harness.js";

const ready = existsSync(MAIN) && existsSync(CHROMIUM);

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ "seed.txt": "seeded\n", "notes.txt": "old notes\n" });
}, 60_000);
afterEach(async () => {
  await closePages(h);
});
afterAll(async () => {
  await h?.close();
});

async function api<T>(path: string): Promise<T> {
  const res = await fetch(`${h.server.url}${path}`, { headers: { authorization: `Bearer ${SECRET}` } });
  return (await res.json()) as T;
}

const fileText = (path: string) => (existsSync(join(h.ws.root, path)) ? readFileSync(join(h.ws.root, path), "utf8") : null);
/** The actions beside the user messages, one bar per message, in order. */
const bars = (page: Page) => page.getByTestId("message-actions");
const selectedId = (page: Page) => page.locator("[data-testid=session-item].selected").getAttribute("data-session-id");

/** Sends a message in the open chat; the model runs `tool` once, then says `reply`. */
async function chatTurn(page: Page, message: string, tool: [string, unknown], answer: string): Promise<void> {
  h.llm.enqueue(reply().tool(tool[0], tool[1]).stop());
  h.llm.enqueue(reply().text(answer).stop());
  await page.getByTestId("chat-input").fill(message);
  await page.getByTestId("chat-send").click();
  await poll(() => page.locator("[data-testid=message][data-role=assistant]").last().textContent()).toBe(answer);
  await poll(() => page.locator(".session-head .badge.status").textContent()).toBe("idle");
}

describe.skipIf(!ready)("the dashboard's checkpoints: Revert, Unrevert, Fork", { timeout: 90_000 }, () => {
  it("reverts from a user message after listing its files, unreverts, and forks from a message into a new session", async () => {
    const page = await h.signedIn();
    await page.getByTestId("new-session").click();
    await poll(() => selectedId(page)).not.toBeNull();
    const sessionId = (await selectedId(page))!;

    await chatTurn(page, "rewrite the notes", ["write_file", { file: "fresh.txt", content: "fresh\n" }], "Notes rewritten.");
    await chatTurn(page, "tidy up", ["bash", { command: "rm seed.txt && echo made > made.txt && echo 'new notes' > notes.txt" }], "Tidied.");
    expect(fileText("seed.txt")).toBeNull();

    // Both user messages started a turn that changed files: each offers Revert and Fork.
    const [first, second] = [bars(page).nth(0), bars(page).nth(1)];
    await poll(() => page.getByTestId("revert-open").count()).toBe(2);
    expect(await page.getByTestId("fork").count()).toBe(2);
    // The actions sit beside the bubbles: a bubble's text is still the message's.
    expect(await page.locator("[data-testid=message][data-role=user]").allTextContents()).toEqual(["rewrite the notes", "tidy up"]);

    // Revert from the second message lists that turn's files only.
    await second.getByTestId("revert-open").click();
    await poll(() => second.getByTestId("revert-file").allTextContents()).toEqual(["remove made.txt", "restore notes.txt", "recreate seed.txt"]);
    await second.getByRole("button", { name: "Cancel" }).click();
    await poll(() => page.getByTestId("revert-panel").count()).toBe(0);

    // Revert from the first: its turn's files and the later turn's, then the files on disk as before it.
    await first.getByTestId("revert-open").click();
    await poll(() => first.getByTestId("revert-file").allTextContents()).toEqual(["remove fresh.txt", "remove made.txt", "restore notes.txt", "recreate seed.txt"]);
    expect(await first.getByTestId("revert-confirm").textContent()).toBe("Revert 4 files");
    await first.getByTestId("revert-confirm").click();
    await poll(() => fileText("notes.txt")).toBe("old notes\n");
    expect(fileText("seed.txt")).toBe("seeded\n");
    expect(fileText("made.txt")).toBeNull();
    expect(fileText("fresh.txt")).toBeNull();
    // The reverted turns stay in view, dimmed; the first message offers Unrevert, nothing offers Revert.
    await poll(() => page.locator("[data-testid=message].reverted:visible, [data-testid=tool-call].reverted").count()).toBe(6);
    await poll(() => first.getByTestId("unrevert").count()).toBe(1);
    expect(await first.locator(".badge").textContent()).toBe("reverted 4 files");
    expect(await page.getByTestId("revert-open").count()).toBe(0);
    const checkpoints = await api<{ reverted: string[] }>(`/sessions/${sessionId}/checkpoints`);
    expect(checkpoints.reverted).toHaveLength(2);

    // A reload shows the same (the reverted flags come from the server, not the tab).
    await page.reload();
    await page.getByTestId("connection-status").filter({ hasText: /^\s*live\s*$/ }).waitFor();
    await poll(() => page.locator("[data-testid=message].reverted:visible, [data-testid=tool-call].reverted").count()).toBe(6);
    await poll(() => bars(page).nth(0).getByTestId("unrevert").count()).toBe(1);

    await bars(page).nth(0).getByTestId("unrevert").click();
    await poll(() => fileText("notes.txt")).toBe("new notes\n");
    expect(fileText("seed.txt")).toBeNull();
    expect(fileText("made.txt")).toBe("made\n");
    expect(fileText("fresh.txt")).toBe("fresh\n");
    await poll(() => page.locator(".chat-log .reverted").count()).toBe(0);
    await poll(() => page.getByTestId("revert-open").count()).toBe(2);
    expect(await page.getByTestId("unrevert").count()).toBe(0);

    // Fork from the first message: a new session holding the first turn only, opened at once.
    await bars(page).nth(0).getByTestId("fork").click();
    await poll(() => selectedId(page)).not.toBe(sessionId);
    const forkId = (await selectedId(page))!;
    expect(new URL(page.url()).hash).toBe(`#/sessions/${forkId}`);
    await poll(() => page.locator("[data-testid=message]:visible .md").allTextContents()).toEqual(["rewrite the notes", "Notes rewritten."]);
    expect((await api<{ forked_from: string }>(`/sessions/${forkId}`)).forked_from).toBe(sessionId);
    // The fork's turns changed no files of its own: no Revert there.
    expect(await page.getByTestId("revert-open").count()).toBe(0);
    expect(errorsOf(page)).toEqual([]);
  });

  it("Revert and Unrevert wait while the session runs (the server would answer 409)", async () => {
    const page = await h.signedIn();
    await page.getByTestId("new-session").click();
    await poll(() => selectedId(page)).not.toBeNull();
    await chatTurn(page, "make a file", ["bash", { command: "echo busy > busy.txt" }], "Made.");
    const revert = bars(page).nth(0).getByTestId("revert-open");
    await poll(() => revert.isEnabled()).toBe(true);
    h.llm.enqueue(hang());
    await page.getByTestId("chat-input").fill("think for a long time");
    await page.getByTestId("chat-send").click();
    await poll(() => page.locator(".session-head .badge.status").textContent()).toBe("running");
    await poll(() => revert.isDisabled()).toBe(true);
    await page.getByTestId("session-cancel").click();
    await poll(() => page.locator(".session-head .badge.status").textContent()).toBe("idle");
    await poll(() => revert.isEnabled()).toBe(true);
    expect(errorsOf(page)).toEqual([]);
  });
});

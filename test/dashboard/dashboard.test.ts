import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { reply } from "../helpers/fake-llm.js";
import { CHROMIUM, closePages, customTool, errorsOf, MAIN, poll, SECRET, signIn, startHarness, type Harness } from "./harness.js";
import { present } from "../helpers/requirements.js";

const ready = present(`the build (${MAIN})`, existsSync(MAIN)) && present(`Chromium (${CHROMIUM})`, existsSync(CHROMIUM));
const askerAgent = {
  ".veil/models.json": JSON.stringify({ "fake/fake-model": { cost: { input: 2, output: 4 } } }),
  ".veil/agents/asker/agent.json": JSON.stringify({ name: "asker", description: "asks the user", modes: { chat: { enabled: true, preActivatedTools: ["ask_user", "confirm_it", "big_output"] } } }),
  ...customTool("ask_user", "Ask the user a question in the UI.", { question: { type: "string" } }, "return 'User answered: ' + JSON.stringify(await input._remoteMethodExecution({ method: 'ask_user', data: { question: input.question }, timeoutMs: 30000 }));"),
  ...customTool("confirm_it", "Ask the user to confirm.", { message: { type: "string" } }, "return 'Confirmed: ' + JSON.stringify(await input._remoteMethodExecution({ method: 'confirm', data: { message: input.message }, timeoutMs: 30000 }));"),
  ...customTool("big_output", "Returns five megabytes.", {}, "return 'A'.repeat(5 * 1024 * 1024 - 1) + 'Z';"),
};

let h: Harness;
/** Every URL the browser requested, to prove the secret never went into one. */
const urls: string[] = [];

beforeAll(async () => {
  h = await startHarness(askerAgent);
  h.context.on("request", (request) => urls.push(request.url()));
}, 60_000);
// A failed test must not leave tabs behind: each holds two event streams of the browser's six connections per host.
afterEach(async () => {
  await closePages(h);
});
afterAll(async () => {
  await h?.close();
});

/** A gate the fake LLM waits on mid-reply, so the test sees the page before the turn ends. */
function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

async function newSession(page: Page, agent = "default"): Promise<string> {
  await page.locator(".agent-picker").selectOption(agent);
  const before = await page.getByTestId("session-item").count();
  await page.getByTestId("new-session").click();
  await poll(() => page.getByTestId("session-item").count()).toBe(before + 1);
  const selected = page.locator("[data-testid=session-item].selected");
  const id = (await selected.getAttribute("data-session-id"))!;
  expect(id).toMatch(/^sess_/);
  return id;
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByTestId("chat-input").fill(text);
  await page.getByTestId("chat-send").click();
}

const assistant = (page: Page) => page.locator("[data-testid=message][data-role=assistant]");

describe.skipIf(!ready)("dashboard in Chromium against veil serve", { timeout: 60_000 }, () => {
  it("a wrong secret says so clearly and nothing is stored", async () => {
    const page = await h.context.newPage();
    await page.goto(`${h.server.url}/`);
    await page.getByTestId("login-secret").fill("not-the-secret");
    await page.getByTestId("login-submit").click();
    await poll(() => page.locator(".login-error").textContent()).toMatch(/Wrong secret/);
    expect(await page.getByTestId("session-list").count()).toBe(0);
    expect(await page.evaluate(() => [sessionStorage.length, localStorage.length])).toEqual([0, 0]);
    expect(await h.context.cookies()).toEqual([]);
    await page.close();
  });

  it("logs in, creates a session, and shows assistant text as it streams, before chat.done", async () => {
    const page = await h.signedIn();
    const id = await newSession(page);
    await poll(() => page.locator(`[data-testid=session-item][data-session-id="${id}"]`).getAttribute("data-status")).toBe("idle");
    const middle = gate();
    h.llm.enqueue(reply().thinking("Let me greet.").text("Hello ").text("from **Veil**").waitFor(middle.promise).text(", done.").usage({ prompt_tokens: 1000, completion_tokens: 500 }).stop());
    await send(page, "say hello");
    await poll(() => page.locator("[data-testid=message][data-role=user]").last().textContent()).toBe("say hello");
    // The reply is held mid-stream: the text is on the page although chat.done has not been sent.
    await poll(() => assistant(page).last().textContent()).toContain("Hello from Veil");
    expect(await page.locator(`[data-testid=session-item][data-session-id="${id}"]`).getAttribute("data-status")).toBe("running");
    expect(await assistant(page).last().locator("strong").textContent()).toBe("Veil");
    middle.open();
    await poll(() => assistant(page).last().textContent()).toContain("Hello from Veil, done.");
    await poll(() => page.locator(`[data-testid=session-item][data-session-id="${id}"]`).getAttribute("data-status")).toBe("idle");
    // The header shows what the runs' chat.done events report (1000 prompt tokens at $2 and 500 output
    // tokens at $4 per million make $0.004 once the runtime prices runs; until then the server says 0).
    const log = (await (await fetch(`${h.server.url}/sessions/${id}/events?after=0&follow=false`, { headers: { authorization: `Bearer ${SECRET}` } })).json()) as { type: string; cost_usd?: number }[];
    const spent = log.filter((e) => e.type === "chat.done" && typeof e.cost_usd === "number").map((e) => e.cost_usd!);
    const expected = spent.length === 0 ? "cost –" : `cost $${(() => { const usd = spent.reduce((a, b) => a + b, 0); return usd < 0.01 && usd > 0 ? usd.toFixed(4) : usd.toFixed(2); })()}`;
    await poll(() => page.locator(".session-head .cost").textContent()).toBe(expected);
    const thinking = assistant(page).last().getByTestId("thinking");
    expect(await thinking.locator("summary").textContent()).toBe("Thinking");
    await thinking.locator("summary").click();
    expect(await thinking.textContent()).toContain("Let me greet.");

    // The secret is in sessionStorage and nowhere else the browser keeps or sends in the clear.
    expect(await page.evaluate(() => sessionStorage.getItem("veil.secret"))).toBe(SECRET);
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage }))).not.toContain(SECRET);
    expect(await h.context.cookies()).toEqual([]);
    expect(page.url()).not.toContain(SECRET);
    expect(urls.filter((url) => url.includes(SECRET))).toEqual([]);
    expect(urls.some((url) => /\/events\?methods=pending&token=/.test(url))).toBe(true);
    // One stream per tab carries the dialogs too (a browser allows six connections per host).
    expect(urls.some((url) => url.includes("/remote-methods?"))).toBe(false);
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });

  it("shows a tool bubble running with live output, then done with its result", async () => {
    const page = await h.signedIn();
    await newSession(page);
    const flag = join(h.ws.root, "go-on.flag");
    h.llm.enqueue(reply().tool("bash", { command: `echo started; while [ ! -f ${flag} ]; do sleep 0.05; done; echo finished` }).stop());
    h.llm.enqueue(reply().text("The command finished.").stop());
    await send(page, "run it");
    const tool = page.locator("[data-testid=tool-call][data-tool-name=bash]");
    await poll(() => tool.getAttribute("data-state")).toBe("running");
    await poll(() => tool.getByTestId("tool-output").textContent()).toContain("started");
    expect(await tool.getByTestId("tool-output").textContent()).not.toContain("finished");
    writeFileSync(flag, "");
    await poll(() => tool.getAttribute("data-state")).toBe("done");
    expect(await tool.getByTestId("tool-output").textContent()).toMatch(/started\s+finished/);
    await poll(() => assistant(page).last().textContent()).toBe("The command finished.");
    await page.close();
  });

  it("nests a sub-agent's session-item inside its parent's", async () => {
    const page = await h.signedIn();
    const parent = await newSession(page);
    h.llm.enqueue(reply().tool("agent_spawn", { agent: "default", instance_name: "helper", objective: "look around" }).stop());
    h.llm.enqueue(reply().text("Spawned a helper.").stop());
    await send(page, "spawn a helper");
    const child = page.locator(`[data-testid=session-item][data-session-id="${parent}"] [data-testid=session-item]`);
    await poll(() => child.count()).toBe(1);
    expect(await child.locator(".row-name").textContent()).toBe("helper");
    expect(await child.getAttribute("data-session-id")).not.toBe(parent);
    await page.close();
  });

  it("shows <script> and javascript: links from the model as text", async () => {
    const page = await h.signedIn();
    await newSession(page);
    h.llm.enqueue(reply().text('Look: <script>window.__pwned = 1</script> <img src=x onerror="window.__pwned = 2"> [click me](javascript:window.__pwned=3) and [docs](https://example.com/a)').stop());
    await send(page, "be evil");
    await poll(() => assistant(page).last().textContent()).toContain("<script>window.__pwned = 1</script>");
    const message = assistant(page).last();
    expect(await message.textContent()).toContain("[click me](javascript:window.__pwned=3)");
    expect(await message.locator("script, img, [onerror]").count()).toBe(0);
    expect(await page.locator("a[href^='javascript:' i]").count()).toBe(0);
    expect(await message.locator("a").getAttribute("href")).toBe("https://example.com/a");
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });

  it("opens remote-method dialogs in every tab (also one opened later); the first answer wins and the other tab's dialog goes", async () => {
    const first = await h.signedIn();
    await newSession(first, "asker");
    h.llm.enqueue(reply().tool("ask_user", { question: "Deploy now?" }).stop());
    h.llm.enqueue(reply().tool("confirm_it", { message: "Really deploy?" }).stop());
    h.llm.enqueue(reply().text("Deploying.").stop());
    await send(first, "ship it");
    const dialogIn = (page: Page) => page.locator("[data-testid=remote-dialog][data-method=ask_user]");
    await dialogIn(first).waitFor();
    expect(await dialogIn(first).textContent()).toContain("Deploy now?");
    const remoteId = await dialogIn(first).getAttribute("data-remote-id");

    // A tab opened after the method went pending gets it replayed on connect.
    const second = await h.signedIn();
    await dialogIn(second).waitFor();
    expect(await dialogIn(second).getAttribute("data-remote-id")).toBe(remoteId);
    await dialogIn(second).getByTestId("remote-answer").fill("yes please");
    await dialogIn(second).getByTestId("remote-submit").click();
    await dialogIn(second).waitFor({ state: "detached" });
    await dialogIn(first).waitFor({ state: "detached" });
    const askTool = first.locator("[data-testid=tool-call][data-tool-name=ask_user]");
    await poll(() => askTool.getAttribute("data-state")).toBe("done");
    expect(await askTool.getByTestId("tool-output").textContent()).toBe('User answered: "yes please"');

    // confirm: remote-answer is the "yes" control; answering in the first tab closes the second's.
    const confirmIn = (page: Page) => page.locator("[data-testid=remote-dialog][data-method=confirm]");
    await confirmIn(first).waitFor();
    await confirmIn(second).waitFor();
    expect(await confirmIn(first).textContent()).toContain("Really deploy?");
    await confirmIn(first).getByTestId("remote-answer").click();
    await confirmIn(second).waitFor({ state: "detached" });
    await confirmIn(first).waitFor({ state: "detached" });
    await poll(() => first.locator("[data-testid=tool-call][data-tool-name=confirm_it]").getByTestId("tool-output").textContent()).toBe("Confirmed: true");
    await poll(() => assistant(first).last().textContent()).toBe("Deploying.");
    expect([...errorsOf(first), ...errorsOf(second)]).toEqual([]);
    await first.close();
    await second.close();
  });

  it("five tabs stay live at once (one stream each, within the browser's six connections per host) and each shows the dialog", async () => {
    const tabs: Page[] = [];
    for (let i = 0; i < 5; i++) tabs.push(await h.signedIn());
    for (const tab of tabs) await poll(() => tab.getByTestId("connection-status").textContent()).toBe("live");
    await newSession(tabs[0]!, "asker");
    h.llm.enqueue(reply().tool("ask_user", { question: "Five tabs?" }).stop());
    h.llm.enqueue(reply().text("Noted.").stop());
    await send(tabs[0]!, "ask me");
    const dialogIn = (page: Page) => page.locator("[data-testid=remote-dialog][data-method=ask_user]");
    for (const tab of tabs) await dialogIn(tab).waitFor();
    await dialogIn(tabs[4]!).getByTestId("remote-answer").fill("all five");
    await dialogIn(tabs[4]!).getByTestId("remote-submit").click();
    for (const tab of tabs) await dialogIn(tab).waitFor({ state: "detached" });
    await poll(() => assistant(tabs[0]!).last().textContent()).toBe("Noted.");
    expect(tabs.flatMap((tab) => errorsOf(tab))).toEqual([]);
    for (const tab of tabs) await tab.close();
  });

  it("session-cancel stops a running bash command and ends the turn", async () => {
    const page = await h.signedIn();
    const id = await newSession(page);
    h.llm.enqueue(reply().tool("bash", { command: "echo sleeping; sleep 60; echo woke" }).stop());
    await send(page, "sleep a while");
    const tool = page.locator("[data-testid=tool-call][data-tool-name=bash]");
    await poll(() => tool.getByTestId("tool-output").textContent()).toContain("sleeping");
    expect(await tool.getAttribute("data-state")).toBe("running");
    await page.getByTestId("session-cancel").click();
    await poll(() => tool.getAttribute("data-state"), { timeout: 10_000 }).toBe("error");
    await poll(() => page.locator(`[data-testid=session-item][data-session-id="${id}"]`).getAttribute("data-status"), { timeout: 10_000 }).toBe("idle");
    await poll(() => page.locator(".notice").last().textContent()).toBe("Run cancelled");
    expect(await tool.getByTestId("tool-output").textContent()).not.toContain("woke");
    expect(h.llm.completionRequests.at(-1)!.body.messages.at(-1).content).toBe("sleep a while");
    await page.close();
  });

  it("truncates a 5 MB tool output in view, with a way to see all of it", async () => {
    const page = await h.signedIn();
    await newSession(page, "asker");
    h.llm.enqueue(reply().tool("big_output", {}).stop());
    h.llm.enqueue(reply().text("That was big.").stop());
    await send(page, "make output");
    const tool = page.locator("[data-testid=tool-call][data-tool-name=big_output]");
    await poll(() => tool.getAttribute("data-state"), { timeout: 20_000 }).toBe("done");
    const shown = await tool.getByTestId("tool-output").evaluate((el) => el.textContent!.length);
    expect(shown).toBeLessThanOrEqual(20_000);
    await poll(() => assistant(page).last().textContent()).toBe("That was big.");
    await tool.getByRole("button", { name: "Show all" }).click();
    const full = await tool.getByTestId("tool-output").evaluate((el) => ({ length: el.textContent!.length, last: el.textContent!.slice(-1) }));
    expect(full).toEqual({ length: 5 * 1024 * 1024, last: "Z" });
    await page.close();
  });

  it("side panel: todos live, wake-up set and cancelled, memory edited through PUT", async () => {
    const page = await h.signedIn();
    const id = await newSession(page);
    h.llm.enqueue(reply().tool("todo_write", { todos: [{ id: "1", content: "write the plan", status: "in_progress", priority: "high" }, { id: "2", content: "ship it", status: "pending", priority: "low" }] }).stop());
    h.llm.enqueue(reply().text("Planned.").stop());
    await send(page, "plan");
    await poll(() => page.getByTestId("todo-list").locator(".todo").allTextContents()).toEqual(["◐write the planhigh", "○ship itlow"]);

    await page.getByRole("tab", { name: "Wake-up" }).click();
    await page.getByLabel("Delay").fill("30m");
    await page.getByLabel("Wake-up message").fill("check the build");
    await page.getByRole("button", { name: "Schedule" }).click();
    await poll(() => page.locator(".wake-current").textContent()).toContain("Once, after 30m — “check the build”");
    const armed = await (await fetch(`${h.server.url}/sessions/${id}/wakeup`, { headers: { authorization: `Bearer ${SECRET}` } })).json();
    expect(armed.wakeup).toMatchObject({ time: "30m", message: "check the build", loop: false });
    await page.getByRole("button", { name: "Cancel wake-up" }).click();
    await poll(() => page.locator(".wake-current").textContent()).toBe("No wake-up scheduled.");
    expect((await (await fetch(`${h.server.url}/sessions/${id}/wakeup`, { headers: { authorization: `Bearer ${SECRET}` } })).json()).wakeup).toBeNull();

    await page.getByRole("tab", { name: "Memory" }).click();
    await poll(() => page.locator(".memory .form-message").textContent()).toMatch(/does not exist yet/);
    await page.getByLabel("Memory file content").fill("# Notes\nprefers tabs\n");
    await page.getByRole("button", { name: "Save" }).click();
    await poll(() => page.locator(".memory .form-message").textContent()).toMatch(/Saved/);
    const saved = await fetch(`${h.server.url}/agents/default/memory/MEMORY.md`, { headers: { authorization: `Bearer ${SECRET}` } });
    expect(await saved.text()).toBe("# Notes\nprefers tabs\n");
    await page.close();
  });

  it("suspends, resumes and closes a session; the status filter shows closed ones on request", async () => {
    const page = await h.signedIn();
    const id = await newSession(page);
    const item = page.locator(`[data-testid=session-item][data-session-id="${id}"]`);
    await page.getByRole("button", { name: "Suspend" }).click();
    await poll(() => item.getAttribute("data-status")).toBe("suspended");
    expect(await page.getByTestId("chat-input").isDisabled()).toBe(true);
    await page.getByRole("button", { name: "Resume" }).click();
    await poll(() => item.getAttribute("data-status")).toBe("idle");
    expect(await page.getByTestId("chat-input").isDisabled()).toBe(false);
    await page.getByRole("button", { name: "Close" }).click();
    await page.getByRole("button", { name: "Really close?" }).click();
    await poll(() => item.count()).toBe(0);
    await page.getByLabel("Show sessions").selectOption("closed");
    await poll(() => item.getAttribute("data-status")).toBe("closed");
    expect(await page.locator("[data-testid=session-item]:not([data-status=closed])").count()).toBe(0);
    await page.getByLabel("Show sessions").selectOption("all");
    await poll(() => item.count()).toBe(1);
    await page.close();
  });

  it("reconnects by itself after a server restart and shows the history", async () => {
    const page = await h.signedIn();
    const id = await newSession(page);
    h.llm.enqueue(reply().text("Before the restart.").stop());
    await send(page, "first message");
    await poll(() => assistant(page).last().textContent()).toBe("Before the restart.");

    await h.restart({
      between: async () => {
        await poll(() => page.getByTestId("connection-status").textContent()).not.toBe("live");
      },
    });
    await poll(() => page.getByTestId("connection-status").textContent(), { timeout: 20_000 }).toBe("live");
    await poll(() => page.locator("[data-testid=message]").allTextContents()).toEqual(["first message", "Before the restart."]);
    expect(await page.locator("[data-testid=session-item].selected").getAttribute("data-session-id")).toBe(id);
    // History comes from the durable event log: the first page from 0, the catch-up after the last seq seen.
    const pages = urls.filter((url) => url.includes(`/sessions/${id}/events?`) && url.includes("follow=false")).map((url) => Number(new URL(url).searchParams.get("after")));
    expect(pages[0]).toBe(0);
    expect(pages.at(-1)).toBeGreaterThan(0);
    expect(urls.filter((url) => url.includes(`/sessions/${id}/messages`))).toEqual([]);

    // Live again: a new turn streams in without a reload.
    h.llm.enqueue(reply().text("After the restart.").stop());
    await send(page, "second message");
    await poll(() => page.locator("[data-testid=message]").allTextContents()).toEqual(["first message", "Before the restart.", "second message", "After the restart."]);

    // A fresh tab loads the same history from the server.
    const other = await h.signedIn();
    await other.locator(`[data-testid=session-item][data-session-id="${id}"] > .session-row`).click();
    await poll(() => other.locator("[data-testid=message]").allTextContents()).toEqual(["first message", "Before the restart.", "second message", "After the restart."]);
    await other.close();
    await page.close();
  });

  it("a tab hidden for a minute lets go of its streams and catches up when shown again", async () => {
    const page = await h.context.newPage();
    await page.clock.install();
    await page.goto(`${h.server.url}/`);
    await signIn(page);
    const id = await newSession(page);
    const setHidden = (hidden: boolean) =>
      page.evaluate((value) => {
        Object.defineProperty(document, "hidden", { value, configurable: true });
        document.dispatchEvent(new Event("visibilitychange"));
      }, hidden);
    await setHidden(true);
    await page.clock.fastForward(61_000);
    await poll(() => page.getByTestId("connection-status").textContent()).toBe("paused");

    // Meanwhile another client chats with the session.
    h.llm.enqueue(reply().text("Answered while you were away.").stop());
    const answer = await fetch(`${h.server.url}/sessions/${id}/chat`, { method: "POST", headers: { authorization: `Bearer ${SECRET}`, "content-type": "application/json" }, body: JSON.stringify({ message: "from the API" }) });
    expect(answer.status).toBe(200);
    expect(await page.locator("[data-testid=message]").count()).toBe(0);

    await setHidden(false);
    await poll(() => page.getByTestId("connection-status").textContent()).toBe("live");
    await poll(() => page.locator("[data-testid=message]").allTextContents()).toEqual(["from the API", "Answered while you were away."]);
    await page.close();
  });

  it("works from the keyboard: sign in with Enter, create with Enter, type and send with Enter, arrows in the list", async () => {
    const page = await h.context.newPage();
    await page.goto(`${h.server.url}/`);
    await page.getByTestId("login-secret").focus();
    await page.keyboard.type(SECRET);
    await page.keyboard.press("Enter");
    await poll(() => page.getByTestId("connection-status").textContent()).toBe("live");
    await page.getByTestId("new-session").focus();
    await page.keyboard.press("Enter");
    await poll(() => page.evaluate(() => document.activeElement?.getAttribute("data-testid"))).toBe("chat-input");
    h.llm.enqueue(reply().text("Typed, not clicked.").stop());
    await page.keyboard.type("hello from the keyboard");
    await page.keyboard.press("Enter");
    await poll(() => assistant(page).last().textContent()).toBe("Typed, not clicked.");
    await page.locator(".session-row").first().focus();
    await page.keyboard.press("ArrowDown");
    expect(await page.evaluate(() => document.activeElement?.closest("[data-testid=session-item]") !== null)).toBe(true);
    await page.keyboard.press("Home");
    expect(await page.evaluate(() => document.activeElement === document.querySelector(".session-row"))).toBe(true);
    await page.close();
  });

  it("a secret that stops working sends the page back to the login form", async () => {
    const page = await h.context.newPage();
    await page.goto(`${h.server.url}/`);
    await signIn(page);
    await page.evaluate(() => sessionStorage.setItem("veil.secret", "stale"));
    await page.reload();
    await poll(() => page.locator(".login-error").textContent()).toMatch(/no longer accepts/);
    expect(await page.evaluate(() => sessionStorage.getItem("veil.secret"))).toBeNull();
    await page.close();
  });
});

import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM, closePages, errorsOf, MAIN, poll, startHarness, type Harness } from "./harness.js";

const ready = existsSync(MAIN) && existsSync(CHROMIUM);
const skill = (name: string, description: string) => `---\nname: ${name}\ndescription: ${description}\n---\nSteps for ${name}.\n`;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    ".veil/skills/release/SKILL.md": skill("release", "Cut a release of this project."),
    ".veil/skills/release/checklist.md": "- tests green",
    ".claude/skills/broken/SKILL.md": "---\nname: broken\n---\n",
  });
}, 60_000);
afterAll(async () => {
  await closePages(h);
  await h?.close();
});

describe.skipIf(!ready)("dashboard: skills tab", { timeout: 60_000 }, () => {
  it("shows the session agent's skills and broken skill folders, and a skill added on disk after Reload", async () => {
    const page = await h.signedIn();
    await page.getByTestId("new-session").click();
    await poll(() => page.locator("[data-testid=session-item].selected").count()).toBe(1);
    await page.getByRole("tab", { name: "Skills" }).click();
    const items = page.getByTestId("skill-list").locator(".skill");
    await poll(() => items.count()).toBe(2);
    const release = page.locator(".skill[data-skill-name=release]");
    expect(await release.getAttribute("data-state")).toBe("active");
    expect(await release.locator(".skill-description").textContent()).toBe("Cut a release of this project.");
    expect(await release.locator(".skill-files").textContent()).toBe("1 other file");
    const broken = page.locator(".skill[data-state=broken]");
    expect(await broken.locator(".skill-name").textContent()).toBe("broken");
    expect(await broken.locator(".skill-error").textContent()).toContain("has no `description`");

    h.ws.write(".veil/skills/deploy/SKILL.md", skill("deploy", "Deploy to staging."));
    await page.getByRole("button", { name: "Reload" }).click();
    await poll(() => page.locator(".skill[data-skill-name=deploy] .skill-description").textContent()).toBe("Deploy to staging.");
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });
});

/** The Skills tab: the skills the selected session's agent sees (GET /skills), broken folders with their error. */
import type { Api } from "./api.js";
import { h, replaceChildren } from "./dom.js";
/** The typed client's shape of a GET /skills entry (type-only: nothing of src/ is bundled). */
import type { Skill as SkillEntry } from "../../src/client/types.js";

export class SkillsView {
  readonly el = h("div", { class: "skills" });
  private readonly list = h("ul", { testid: "skill-list", class: "skill-list", "aria-label": "Skills" });
  private agent: string | null = null;
  private loaded = 0;

  constructor(private readonly api: Api) {
    const reload = h("button", { type: "button", onclick: () => void this.load() }, "Reload");
    replaceChildren(this.el, h("div", { class: "row" }, h("span", { class: "skills-note" }, "SKILL.md folders; the model loads one with the skill tool."), reload), this.list);
    this.render(null);
  }

  /** A session of `agent` was selected (null: none); the list is fetched when the tab is shown. */
  select(agent: string | null): void {
    if (agent === this.agent) return;
    this.agent = agent;
    this.render(null);
  }

  /** Fetches the list again (skill folders are re-read on change, so this shows edits on disk). */
  async load(): Promise<void> {
    const agent = this.agent;
    if (!agent) return this.render(null);
    const ticket = ++this.loaded;
    try {
      const skills = await this.api.get<SkillEntry[]>(`/skills?agent=${encodeURIComponent(agent)}`);
      if (ticket === this.loaded && agent === this.agent) this.render(skills);
    } catch (error) {
      if (ticket === this.loaded) replaceChildren(this.list, h("li", { class: "empty error" }, (error as Error).message));
    }
  }

  private render(skills: SkillEntry[] | null): void {
    if (!this.agent) return replaceChildren(this.list, h("li", { class: "empty" }, "No session selected."));
    if (!skills) return replaceChildren(this.list, h("li", { class: "empty" }, "Loading…"));
    if (skills.length === 0) return replaceChildren(this.list, h("li", { class: "empty" }, `No skills for agent ${this.agent}. Add a folder with a SKILL.md under .veil/skills/.`));
    replaceChildren(this.list, skills.map((skill) => item(skill)));
  }
}

function item(skill: SkillEntry): HTMLElement {
  const head = h("div", { class: "skill-head" }, h("strong", { class: "skill-name" }, skill.name ?? folderName(skill.folder)), h("span", { class: "badge" }, skill.scope), skill.state === "active" ? null : h("span", { class: `badge state ${skill.state}` }, skill.state));
  const detail =
    skill.state === "broken"
      ? h("p", { class: "skill-error" }, `${skill.file}: ${skill.error ?? "broken"}`)
      : h("p", { class: "skill-description" }, skill.description ?? "", skill.state === "shadowed" && skill.shadowedBy ? h("span", { class: "skill-shadowed" }, ` (hidden by ${skill.shadowedBy})`) : null);
  const files = skill.files?.length ? h("p", { class: "skill-files" }, `${skill.files.length} other file${skill.files.length === 1 ? "" : "s"}`) : null;
  return h("li", { class: `skill ${skill.state}`, "data-skill-name": skill.name ?? "", "data-state": skill.state, title: skill.folder }, head, detail, files);
}

function folderName(folder: string): string {
  return folder.split("/").filter(Boolean).at(-1) ?? folder;
}

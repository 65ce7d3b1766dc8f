import type { Hono } from "hono";
import { ownEntry } from "../../config/dictionary.js";
import type { AgentConfig } from "../../config/types.js";
import { VeilError } from "../../errors.js";
import { describeTools, publicToolList } from "../../tools/catalog.js";
import { publicSkillList } from "../../tools/skills/listing.js";
import type { AppEnv, ServerState } from "../context.js";

export function publicAgent(agent: AgentConfig) {
  return {
    name: agent.name,
    description: agent.description,
    model: agent.model ?? null,
    source: agent.source,
    folder: agent.agentFolder,
    reasoning: agent.reasoning ?? null,
    budget: agent.budget,
    modes: agent.modes,
  };
}

export function agentRoutes(app: Hono<AppEnv>, state: ServerState): void {
  const { runtime } = state;

  app.get("/agents", (c) => c.json(Object.values(runtime.agents()).map(publicAgent)));

  app.get("/agents/:name", (c) => {
    const agent = ownEntry(runtime.agents(c.req.param("name")), c.req.param("name"));
    if (!agent) throw new VeilError("AGENT_NOT_FOUND", `no agent named "${c.req.param("name")}"`);
    return c.json(publicAgent(agent));
  });

  const agentNamed = (name = "default"): AgentConfig => {
    const agent = ownEntry(runtime.agents(name), name);
    if (!agent) throw new VeilError("AGENT_NOT_FOUND", `no agent named "${name}"`);
    return agent;
  };

  app.get("/tools", async (c) => {
    const agent = agentNamed(c.req.query("agent"));
    const listing = await describeTools({ builtins: runtime.builtins, customTools: runtime.customTools, skills: runtime.skills, agent, mode: c.req.query("mode") ?? "chat" });
    return c.json(publicToolList(listing));
  });

  app.get("/skills", async (c) => c.json(await publicSkillList(runtime.skills.discover(agentNamed(c.req.query("agent"))))));
}

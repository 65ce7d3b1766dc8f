import type { Runtime } from "../../runtime.js";
import { MULTI_AGENT_SERVICE, MultiAgentService } from "./service.js";

/**
 * Feature installer: `runtime.services.multiAgent` (delivery chains, get-summary window)
 * and `runtime.services.llm` for tools that call the model themselves.
 */
export async function installMultiAgent(runtime: Runtime): Promise<void> {
  const service = runtime.resources.get(
    MULTI_AGENT_SERVICE,
    () =>
      new MultiAgentService({
        sessions: runtime.sessions,
        store: runtime.store,
        llm: runtime.llm,
        clock: runtime.clock,
        ids: runtime.ids,
        log: runtime.log,
        settings: runtime.config.settings,
        agents: () => runtime.agents(),
      }),
  );
  runtime.services[MULTI_AGENT_SERVICE] = service;
  // Runs before sessions.recover() (createRuntime installs features first): async msg#1s
  // still in a target's durable inbox get their caller back, so the recovered run answers it.
  await service.delivery.recover();
  runtime.services.llm ??= runtime.llm;
  // Sub-agents live no longer than their parent: closing a session closes its
  // descendants (depth first), so no orphan keeps running and spending tokens.
  runtime.sessions.onClose(async (parentId) => {
    const children = await runtime.store.listSessions({ parentSessionId: parentId });
    for (const child of children) if (child.status !== "closed") await runtime.sessions.close(child.id);
  });
}

import { Type } from "../../../schema.js";
import { noteContactMessage, recordContact } from "../counters.js";
import { asyncNotice, DEFAULT_SYNC_TIMEOUT_SECONDS, wrapAgentMessage } from "../messages.js";
import { multiAgent } from "../service.js";
import { ToolError } from "../../../errors.js";
import { defineTool } from "../../../tools/define.js";
import { xmlEnvelope } from "../../../tools/format.js";

const Params = Type.Object({
  sessionId: Type.String({ minLength: 1, description: "Target session (from agent_spawn)" }),
  message: Type.String(),
  async_inform: Type.Optional(
    Type.Boolean({
      description:
        "Return a notice at once; end your turn after the notice, the reply arrives as a new user message. " +
        "A SECOND async_inform to a target with an in-flight dispatch returns the FIRST mid-run text response, NOT the final response.",
    }),
  ),
  timeout: Type.Optional(Type.Integer({ minimum: 1, description: `Sync-mode timeout in seconds (default ${DEFAULT_SYNC_TIMEOUT_SECONDS})` })),
  full_steps: Type.Optional(Type.Boolean({ description: "Reply with a per-line log of all assistant text + tool calls (not on follow-up async messages)" })),
});

/**
 * agent_message: sync (new turn on an idle target, injection at the next
 * boundary of a busy one, with a correlated wait) or async with the asymmetric
 * delivery rules (core/agents/delivery.ts). Any session may message a session id it
 * knows, except itself.
 */
export const agentMessage = defineTool({
  name: "agent_message",
  description:
    "Send a message to a subagent session (sync by default; async_inform: true for fire-and-forget).",
  params: Params,
  async execute(input, ctx) {
    const service = multiAgent(ctx);
    const { store } = service.deps;
    if (input.sessionId === ctx.sessionId) {
      throw new ToolError("VALIDATION_ERROR", "agent_message cannot target your own session; pass a sub-agent's session id");
    }
    const target = await service.sessionFor(ctx.sessionId, input.sessionId);
    if (target.status === "closed") throw new ToolError("SESSION_CLOSED", `session ${target.id} is closed; spawn a new sub-agent instead`);
    if (target.status === "suspended") throw new ToolError("SESSION_SUSPENDED", `session ${target.id} is suspended; it must be resumed before it can receive messages`);

    const content = wrapAgentMessage(ctx.agent.name, ctx.sessionId, input.message);
    const send = { callerId: ctx.sessionId, target, content, fullSteps: input.full_steps === true, meta: { source: "agent", fromSessionId: ctx.sessionId, fromAgent: ctx.agent.name, fromToolCallId: ctx.toolCallId } };
    const head: [string, string | null][] = [
      ["instance-name", target.instance_name],
      ["session-id", target.id],
    ];
    await recordContact(store, ctx.otherSessions, target.id, ctx.sessionId, new Date(ctx.clock.now()).toISOString());
    if (input.async_inform) {
      const sent = await service.delivery.sendAsync(send);
      await noteContactMessage(store, ctx.otherSessions, target.id, ctx.sessionId, sent.messageId);
      return {
        output: xmlEnvelope([...head, ["notice", asyncNotice(target.instance_name, target.id, sent.role)]]),
        details: { sessionId: target.id, async: true, dispatchRole: sent.role === "seed" ? "msg#1" : "msg#2+", messageId: sent.messageId },
      };
    }
    const timeoutSeconds = input.timeout ?? DEFAULT_SYNC_TIMEOUT_SECONDS;
    const reply = await service.delivery.sendSync({ ...send, timeoutMs: timeoutSeconds * 1000, signal: ctx.signal });
    await noteContactMessage(store, ctx.otherSessions, target.id, ctx.sessionId, reply.messageId);
    return {
      output: xmlEnvelope([...head, ["finish-reason", reply.finishReason], ["content", reply.text]]),
      details: { sessionId: target.id, async: false, finishReason: reply.finishReason, source: reply.source, messageId: reply.messageId },
    };
  },
});

import { Type } from "../../schema.js";
import { defineTool } from "../define.js";
import { ToolError } from "../../errors.js";

const Params = Type.Object(
  {
    time: Type.Union([Type.String(), Type.Number()], {
      description: 'Delay: "30m", "90s", "2h", or a bare number (= minutes). "0" disables and removes any existing schedule.',
    }),
    message: Type.Optional(
      Type.String({ description: "New user turn text; required when time > 0" }),
    ),
    loop: Type.Optional(Type.Boolean({ description: "Re-arm and fire every time until cancelled" })),
  },
  { additionalProperties: false },
);

/**
 * `schedule_wakeup`: one schedule per session (arming replaces),
 * `"0"` cancels, `loop` re-arms. Delivery, persistence and the suspended/closed
 * rules live in the runtime's wake-up service.
 */
export const scheduleWakeup = defineTool({
  name: "schedule_wakeup",
  description:
    "Schedule a self wake-up: after the delay, message arrives as a new user turn. One schedule per session; a new one replaces it.",
  params: Params,
  async execute(input, ctx) {
    const wakeups = ctx.services.wakeups;
    if (!wakeups) throw new ToolError("TOOL_CONTEXT_INVALID", "schedule_wakeup is not available: this runtime has no wake-up service");
    const replacing = (await wakeups.get(ctx.sessionId)) !== null;
    const info = await wakeups.arm(ctx.sessionId, { time: input.time, message: input.message, loop: input.loop }, ctx.wakeupRow);
    if (!info) {
      return {
        output: replacing ? "Wake-up cancelled; no schedule remains for this session." : "No wake-up was scheduled; nothing to cancel.",
        details: { cancelled: replacing, wakeup: null },
      };
    }
    const when = info.loop ? `every ${info.time}, first at ${info.nextFireAt}` : `in ${info.time}, at ${info.nextFireAt}`;
    const lines = [
      `${info.loop ? "Looping wake-up" : "Wake-up"} scheduled ${when}. The message will arrive as a new user turn: ${JSON.stringify(info.message)}`,
      replacing ? "It replaced the previous schedule of this session." : "",
      info.loop ? 'Cancel it with schedule_wakeup({ time: "0" }).' : "",
    ];
    return { output: lines.filter(Boolean).join("\n"), details: { wakeup: info, replaced: replacing } };
  },
});

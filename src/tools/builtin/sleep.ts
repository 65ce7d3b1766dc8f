import { Type } from "../../schema.js";
import { defineTool } from "../define.js";
import { ToolError } from "../../errors.js";

const MAX_SECONDS = 300;

const Params = Type.Object(
  {
    seconds: Type.Number({ minimum: 0, maximum: MAX_SECONDS }),
  },
  { additionalProperties: false },
);

/** Waits on the injected clock; counts against wall time, not iterations. Cancel interrupts it. */
export const sleep = defineTool({
  name: "sleep",
  description: "Wait N seconds (counts against the time limit, not iterations).",
  params: Params,
  readOnly: true,
  async execute(input, ctx) {
    const started = ctx.clock.monotonic();
    try {
      await ctx.clock.sleep(input.seconds * 1000, ctx.signal);
    } catch {
      const slept = ((ctx.clock.monotonic() - started) / 1000).toFixed(1);
      throw new ToolError("CANCELLED", `sleep interrupted after ${slept}s`);
    }
    return { output: `Slept ${input.seconds} seconds.`, details: { seconds: input.seconds } };
  },
});

import { afterEach, describe, expect, it } from "vitest";
import { Type } from "../../src/schema.js";
import { defineTool } from "../../src/tools/define.js";
import type { ToolContext } from "../../src/tools/types.js";
import { hang, reply } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A built-in tool that records its warm-ups (and the context each got) and its calls. */
function warmingTool() {
  const warmUps: ToolContext[] = [];
  let warmed!: () => void;
  const firstWarmUp = new Promise<void>((resolve) => (warmed = resolve));
  const calls: number[] = [];
  const tool = defineTool({
    name: "warm_probe",
    description: "test tool",
    params: Type.Object({}),
    warmUp(ctx) {
      warmUps.push(ctx);
      warmed();
    },
    async execute() {
      calls.push(warmUps.length);
      return "ok";
    },
  });
  return { tool, warmUps, firstWarmUp, calls };
}

describe("tool warm-up (while the model thinks)", () => {
  it("runs while the turn's first model request is still unanswered, with the session's context", async () => {
    const probe = warmingTool();
    h = await createRuntimeHarness({ builtins: [probe.tool] });
    h.llm.enqueue(hang());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const receipt = await h.runtime.sessions.send(session.id, "go");
    await probe.firstWarmUp;
    expect(probe.warmUps).toHaveLength(1);
    expect(probe.warmUps[0]!.sessionId).toBe(session.id);
    expect(probe.warmUps[0]!.workspace).toBe(h.runtime.config.paths.workspace);
    await h.runtime.sessions.cancel(session.id);
    expect((await receipt.result).stopReason).toBe("cancelled");
  });

  it("runs once per turn, before the first call, however many model requests the turn makes", async () => {
    const probe = warmingTool();
    h = await createRuntimeHarness({ builtins: [probe.tool] });
    // The first answer waits for the warm-up, so the turn cannot outrun it.
    h.llm.enqueue(reply().waitFor(probe.firstWarmUp).tool("warm_probe", {}).stop(), reply().tool("warm_probe", {}).stop(), reply().text("done").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    const receipt = await h.runtime.sessions.send(session.id, "go");
    expect((await receipt.result).stopReason).toBe("stop");
    expect(probe.warmUps).toHaveLength(1);
    expect(probe.calls).toEqual([1, 1]);
  });
});

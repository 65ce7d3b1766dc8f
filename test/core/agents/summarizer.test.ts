import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { systemClock } from "../../../src/base/clock.js";
import type { Settings } from "../../../src/config/types.js";
import { summarizeTranscript } from "../../../src/core/agents/summarizer.js";
import { VeilError } from "../../../src/errors.js";
import { createLlmClient } from "../../../src/llm/fallback.js";
import type { MessageRow } from "../../../src/store/store.js";
import { fakeProviderSettings, hang, httpError, reply, startFakeLlm, type FakeLlm } from "../../helpers/fake-llm.js";

const rows = [{ role: "user", content: "sort the files", tool_calls: null } as unknown as MessageRow];

describe("summarizeTranscript", () => {
  let llm: FakeLlm;
  let settings: Settings;
  beforeEach(async () => {
    llm = await startFakeLlm();
    settings = fakeProviderSettings(llm, { maxRetries: 0, baseDelayMs: 1, maxDelayMs: 1 });
  });
  afterEach(async () => {
    await llm.close();
  });
  const client = () => createLlmClient({ settings, models: {}, env: {}, clock: systemClock });

  it("answers the model's text", async () => {
    llm.enqueue(reply().text("It sorted half the files.").stop());
    const summary = await summarizeTranscript({ llm: client(), modelKey: "fake/a", rows, objective: "sort", signal: new AbortController().signal });
    expect(summary.text).toBe("It sorted half the files.");
  });

  it("reports a provider failure as LLM_ERROR", async () => {
    llm.enqueue(httpError(400));
    const error = await summarizeTranscript({ llm: client(), modelKey: "fake/a", rows, objective: null, signal: new AbortController().signal }).catch((e: VeilError) => e);
    expect((error as VeilError).code).toBe("LLM_ERROR");
  });

  it("reports why its run stopped (a lost lease), not a model failure, when the run's signal ends the call", async () => {
    llm.enqueue(hang());
    const run = new AbortController();
    const pending = summarizeTranscript({ llm: client(), modelKey: "fake/a", rows, objective: null, signal: run.signal }).catch((e: VeilError) => e);
    await llm.waitForRequests(1);
    run.abort(new VeilError("LEASE_LOST", "this node lost the session"));
    const error = (await pending) as VeilError;
    expect(error.code).toBe("LEASE_LOST");
    expect(error.message).toContain("lost the session");
  });

  it("reports a plain abort as CANCELLED", async () => {
    llm.enqueue(hang());
    const run = new AbortController();
    const pending = summarizeTranscript({ llm: client(), modelKey: "fake/a", rows, objective: null, signal: run.signal }).catch((e: VeilError) => e);
    await llm.waitForRequests(1);
    run.abort();
    expect(((await pending) as VeilError).code).toBe("CANCELLED");
  });
});

import type { Clock } from "../../base/clock.js";
import type { Logger } from "../../base/log.js";
import { ZERO_USAGE } from "../../base/usage.js";
import type { LlmClient, LlmRequest, StreamEvent } from "../types.js";
import { normalized } from "./compare.js";
import { recordedRequest, recordedResponse, replayedEvents } from "./format.js";
import { isWireLine, readRecording, recordingAppender, ReplayQueue } from "./file.js";

type ClientRequest = Omit<LlmRequest, "model"> & { modelKey: string };

/**
 * A client that answers as `inner` does and appends each finished exchange to `file` as one
 * JSON line. A call its consumer leaves before the end is not an exchange: nothing is written.
 */
export function recordingClient(inner: LlmClient, options: { file: string; workspace: string; clock: Clock; log?: Logger }): LlmClient {
  const append = recordingAppender(options.file, options.log);
  async function* stream(request: ClientRequest): AsyncGenerator<StreamEvent> {
    const asked = recordedRequest(request);
    for await (const event of inner.stream(request)) {
      if (event.type === "done" || event.type === "error") {
        append({ at: new Date(options.clock.now()).toISOString(), workspace: options.workspace, request: asked, response: recordedResponse(event) });
      }
      yield event;
    }
  }
  return { stream, ...(inner.checkReady ? { checkReady: (key: string) => inner.checkReady!(key) } : {}) };
}

/**
 * A client that answers every call from a recording and sends nothing anywhere. A call takes
 * the first exchange not yet used whose request is the same (ids, dates and the workspace
 * aside); a call no exchange matches fails with REPLAY_MISMATCH naming the first difference.
 * The claude-cli engine's lines (`wire`) are its own and left to it.
 */
export function replayingClient(options: { file: string; workspace: string }): LlmClient {
  const lines = readRecording(options.file).flatMap(({ line, exchange }) =>
    isWireLine(exchange) ? [] : [{ line, request: normalized(exchange.request, exchange.workspace), value: exchange }],
  );
  const queue = new ReplayQueue(options.file, lines);

  async function* stream(request: ClientRequest): AsyncGenerator<StreamEvent> {
    const failure = (code: "REPLAY_MISMATCH" | "CANCELLED", message: string): StreamEvent => ({
      type: "error",
      error: { code, message, retryable: false },
      partial: { content: null, thinking: null, toolCalls: [] },
      usage: { ...ZERO_USAGE },
      model: request.modelKey,
    });
    if (request.signal?.aborted) return yield failure("CANCELLED", "request cancelled");
    const taken = queue.take(normalized(recordedRequest(request), options.workspace));
    if ("mismatch" in taken) return yield failure("REPLAY_MISMATCH", taken.mismatch);
    yield* replayedEvents(taken.value.response);
  }
  // Nothing is sent: no provider or key has to be configured.
  return { stream, checkReady: () => undefined };
}

/**
 * The model client a runtime uses, as the environment asks: `VEIL_REPLAY=<file>` answers from
 * a recording (no provider is made), `VEIL_RECORD=<file>` records what the client answers.
 */
export function clientForRecordings(make: () => LlmClient, options: { env: Record<string, string | undefined>; workspace: string; clock: Clock; log?: Logger }): LlmClient {
  const { env } = options;
  if (env.VEIL_REPLAY) return replayingClient({ file: env.VEIL_REPLAY, workspace: options.workspace });
  const client = make();
  return env.VEIL_RECORD ? recordingClient(client, { file: env.VEIL_RECORD, workspace: options.workspace, clock: options.clock, log: options.log }) : client;
}

import { appendFileSync, readFileSync } from "node:fs";
import type { Clock } from "../../base/clock.js";
import type { Logger } from "../../base/log.js";
import { ZERO_USAGE } from "../../base/usage.js";
import { errorMessage, VeilError } from "../../errors.js";
import type { LlmClient, LlmRequest, StreamEvent } from "../types.js";
import { firstDifference, normalized } from "./compare.js";
import { recordedRequest, recordedResponse, replayedEvents, type RecordedExchange } from "./format.js";

type ClientRequest = Omit<LlmRequest, "model"> & { modelKey: string };

/**
 * A client that answers as `inner` does and appends each finished exchange to `file` as one
 * JSON line. A call its consumer leaves before the end is not an exchange: nothing is written.
 */
export function recordingClient(inner: LlmClient, options: { file: string; workspace: string; clock: Clock; log?: Logger }): LlmClient {
  let warned = false;
  const append = (exchange: RecordedExchange) => {
    try {
      // One write per line, in the order calls end: lines never interleave, even across processes.
      appendFileSync(options.file, `${JSON.stringify(exchange)}\n`);
    } catch (error) {
      if (!warned) options.log?.warn("VEIL_RECORD: cannot append to the recording", { file: options.file, error: errorMessage(error) });
      warned = true;
    }
  };
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
 * aside), so one session's calls are answered in the order they were recorded even while
 * sub-agents interleave theirs; a call no exchange matches fails with REPLAY_MISMATCH naming
 * the first difference from the next unused exchange.
 */
export function replayingClient(options: { file: string; workspace: string }): LlmClient {
  const exchanges = readRecording(options.file).map((exchange, index) => ({
    line: index + 1,
    exchange,
    request: normalized(exchange.request, exchange.workspace),
    used: false,
  }));
  let calls = 0;

  async function* stream(request: ClientRequest): AsyncGenerator<StreamEvent> {
    calls++;
    const asked = normalized(recordedRequest(request), options.workspace);
    const failure = (code: "REPLAY_MISMATCH" | "CANCELLED", message: string): StreamEvent => ({
      type: "error",
      error: { code, message, retryable: false },
      partial: { content: null, thinking: null, toolCalls: [] },
      usage: { ...ZERO_USAGE },
      model: request.modelKey,
    });
    const mismatch = (message: string) => failure("REPLAY_MISMATCH", message);
    if (request.signal?.aborted) return yield failure("CANCELLED", "request cancelled");
    const open = exchanges.filter((entry) => !entry.used);
    const match = open.find((entry) => firstDifference(entry.request, asked) === null);
    if (!match) {
      const next = open[0];
      if (!next) return yield mismatch(`model call ${calls} has no recorded exchange left (${options.file} holds ${exchanges.length})`);
      return yield mismatch(`model call ${calls} differs from the recorded exchange on line ${next.line} of ${options.file}: ${firstDifference(next.request, asked)}`);
    }
    match.used = true;
    yield* replayedEvents(match.exchange.response);
  }
  // Nothing is sent: no provider or key has to be configured.
  return { stream, checkReady: () => undefined };
}

/** The exchanges of a recording file; CONFIG_ERROR naming the file (and line) when it cannot be read. */
export function readRecording(file: string): RecordedExchange[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new VeilError("CONFIG_ERROR", `VEIL_REPLAY: cannot read the recording ${file}: ${errorMessage(error)}`);
  }
  const exchanges: RecordedExchange[] = [];
  text.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new VeilError("CONFIG_ERROR", `VEIL_REPLAY: line ${index + 1} of ${file} is not JSON: ${errorMessage(error)}`);
    }
    if (!isExchange(value)) throw new VeilError("CONFIG_ERROR", `VEIL_REPLAY: line ${index + 1} of ${file} is not a recorded exchange (it needs request.modelKey, request.messages and response.model)`);
    exchanges.push(value);
  });
  return exchanges;
}

function isExchange(value: unknown): value is RecordedExchange {
  const v = value as Partial<RecordedExchange> | null;
  return (
    typeof v === "object" && v !== null && typeof v.workspace === "string" && typeof v.request?.modelKey === "string" && Array.isArray(v.request.messages) && typeof v.response?.model === "string" &&
    (("message" in v.response && typeof v.response.message === "object") || ("error" in v.response && typeof v.response.error === "object"))
  );
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

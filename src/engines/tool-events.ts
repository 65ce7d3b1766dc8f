import type { ToolCallRequest } from "../llm/types.js";
import type { RunEvent, RunIO, ToolCallResult } from "./types.js";

/**
 * Runs a response's tool calls through io.executeTool and yields every call's events as they
 * come, one at a time: a call's next step waits until its last event was taken (and so
 * stored). Calls start at once, except that a call touching a path an earlier call of the
 * response also touches starts once that call has ended: calls on one file run one after
 * another in the order the model wrote them (two parallel edits of one file would each read
 * it before either wrote, and one edit would be lost). Returns the results in call order.
 */
export async function* runToolCalls(
  calls: readonly ToolCallRequest[],
  io: Pick<RunIO, "executeTool">,
  touches: (call: ToolCallRequest) => readonly string[] = () => [],
): AsyncGenerator<RunEvent, ToolCallResult[]> {
  // Most responses ask for one call: its events pass straight through, without the race below.
  if (calls.length === 1) return yield* singleCall(calls[0]!, io);
  const waitsFor = predecessorsOnPaths(calls, touches);
  const streams: (AsyncIterator<RunEvent> | undefined)[] = calls.map(() => undefined);
  const ended = calls.map(() => false);
  const results: (ToolCallResult | undefined)[] = calls.map(() => undefined);
  type Pulled = { index: number; next: IteratorResult<RunEvent> };
  const pending = new Map<number, Promise<Pulled>>();
  const pull = (index: number) => {
    const stream = (streams[index] ??= io.executeTool(calls[index]!)[Symbol.asyncIterator]());
    pending.set(index, stream.next().then((next) => ({ index, next })));
  };
  const startReady = () => {
    calls.forEach((_, index) => {
      if (!streams[index] && !ended[index] && waitsFor[index]!.every((before) => ended[before])) pull(index);
    });
  };
  startReady();
  while (pending.size > 0) {
    const { index, next } = await Promise.race(pending.values());
    pending.delete(index);
    if (next.done) {
      ended[index] = true;
      // A broken executor that ended without a result: the call is answered, never left open.
      if (!results[index]) {
        results[index] = missingResult(calls[index]!);
        yield { type: "tool_finished", result: results[index]!, input: null };
      }
      startReady();
      continue;
    }
    if (next.value.type === "tool_finished") results[index] = next.value.result;
    yield next.value;
    pull(index);
  }
  return results as ToolCallResult[];
}

async function* singleCall(call: ToolCallRequest, io: Pick<RunIO, "executeTool">): AsyncGenerator<RunEvent, ToolCallResult[]> {
  let result: ToolCallResult | undefined;
  for await (const event of io.executeTool(call)) {
    if (event.type === "tool_finished") result = event.result;
    yield event;
  }
  if (!result) {
    result = missingResult(call);
    yield { type: "tool_finished", result, input: null };
  }
  return [result];
}

/** For each call, the earlier calls it must wait for: the last one before it on each of its paths. */
function predecessorsOnPaths(calls: readonly ToolCallRequest[], touches: (call: ToolCallRequest) => readonly string[]): number[][] {
  const lastOnPath = new Map<string, number>();
  return calls.map((call, index) => {
    const before = new Set<number>();
    for (const path of new Set(touches(call))) {
      const last = lastOnPath.get(path);
      if (last !== undefined) before.add(last);
      lastOnPath.set(path, index);
    }
    return [...before];
  });
}

function missingResult(call: ToolCallRequest): ToolCallResult {
  return { call, output: "Error: INTERNAL_ERROR — the tool call ended without a result", success: false, state: "error", durationMs: 0 };
}

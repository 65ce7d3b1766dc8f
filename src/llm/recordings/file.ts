import { appendFileSync, readFileSync } from "node:fs";
import type { Logger } from "../../base/log.js";
import { errorMessage, VeilError } from "../../errors.js";
import { firstDifference } from "./compare.js";
import type { RecordingLine, RecordedExchange, WireExchange } from "./format.js";

/**
 * A writer of recording lines: one write per line, in the order calls end, so lines never
 * interleave, even across processes. A file that cannot be written is reported once.
 */
export function recordingAppender(file: string, log?: Logger): (line: RecordingLine) => void {
  let warned = false;
  return (line) => {
    try {
      appendFileSync(file, `${JSON.stringify(line)}\n`);
    } catch (error) {
      if (!warned) log?.warn("VEIL_RECORD: cannot append to the recording", { file, error: errorMessage(error) });
      warned = true;
    }
  };
}

/** The lines of a recording file, with their line numbers; CONFIG_ERROR naming the file (and line) when it cannot be read. */
export function readRecording(file: string): { line: number; exchange: RecordingLine }[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new VeilError("CONFIG_ERROR", `VEIL_REPLAY: cannot read the recording ${file}: ${errorMessage(error)}`);
  }
  const lines: { line: number; exchange: RecordingLine }[] = [];
  text.split("\n").forEach((raw, index) => {
    if (raw.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new VeilError("CONFIG_ERROR", `VEIL_REPLAY: line ${index + 1} of ${file} is not JSON: ${errorMessage(error)}`);
    }
    if (!isExchange(value) && !isWireExchange(value)) {
      throw new VeilError(
        "CONFIG_ERROR",
        `VEIL_REPLAY: line ${index + 1} of ${file} is not a recorded exchange (it needs request.modelKey, request.messages and response.model, or wire "anthropic" with request.path and response.status)`,
      );
    }
    lines.push({ line: index + 1, exchange: value });
  });
  return lines;
}

export function isWireLine(exchange: RecordingLine): exchange is WireExchange {
  return "wire" in exchange;
}

function isExchange(value: unknown): value is RecordedExchange {
  const v = value as Partial<RecordedExchange> | null;
  return (
    typeof v === "object" && v !== null && typeof v.workspace === "string" && typeof v.request?.modelKey === "string" && Array.isArray(v.request.messages) && typeof v.response?.model === "string" &&
    (("message" in v.response && typeof v.response.message === "object") || ("error" in v.response && typeof v.response.error === "object"))
  );
}

function isWireExchange(value: unknown): value is WireExchange {
  const v = value as Partial<WireExchange> | null;
  return (
    typeof v === "object" && v !== null && v.wire === "anthropic" && typeof v.workspace === "string" && typeof v.request?.method === "string" && typeof v.request.path === "string" &&
    typeof v.response?.status === "number" && typeof v.response.body === "string"
  );
}

/**
 * The exchanges a replay answers from. A call takes the first exchange not yet used whose
 * (normalized) request is the same, so one session's calls are answered in the order they
 * were recorded even while other sessions interleave theirs; a call no exchange matches gets
 * the REPLAY_MISMATCH message naming the first difference from the next unused exchange.
 */
export class ReplayQueue<T> {
  private calls = 0;
  private readonly entries: { line: number; request: unknown; value: T; used: boolean }[];

  constructor(
    private readonly file: string,
    entries: readonly { line: number; request: unknown; value: T }[],
  ) {
    this.entries = entries.map((entry) => ({ ...entry, used: false }));
  }

  /** The recorded exchange answering this (normalized) request, or why there is none. */
  take(asked: unknown): { value: T } | { mismatch: string } {
    const call = ++this.calls;
    const open = this.entries.filter((entry) => !entry.used);
    const match = open.find((entry) => firstDifference(entry.request, asked) === null);
    if (match) {
      match.used = true;
      return { value: match.value };
    }
    const next = open[0];
    if (!next) return { mismatch: `model call ${call} has no recorded exchange left (${this.file} holds ${this.entries.length})` };
    return { mismatch: `model call ${call} differs from the recorded exchange on line ${next.line} of ${this.file}: ${firstDifference(next.request, asked)}` };
  }
}

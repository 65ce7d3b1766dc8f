import { errorMessage, isVeilError } from "../errors.js";
import type { ToolCallRequest } from "../llm/types.js";
import type { Store } from "../store/store.js";
import { formatThrown, formatToolError, preview } from "../tools/format.js";
import type { SessionToolset } from "../tools/registry.js";
import type { Attachment, Logger, ToolContext, ToolOutcome } from "../tools/types.js";
import type { EventBus } from "../base/events.js";
import type { Clock } from "../base/clock.js";

export interface ToolCallResult {
  call: ToolCallRequest;
  output: string;
  attachments?: Attachment[];
  success: boolean;
  state: "done" | "error" | "cancelled";
  durationMs: number;
}

export interface ToolRunDeps {
  store: Store;
  bus: EventBus;
  clock: Clock;
  log: Logger;
  toolset: SessionToolset;
  sessionId: string;
  /** Builds the context for one call; the signal is the run's (plus the tool's timeout). */
  makeContext(call: ToolCallRequest, signal: AbortSignal): ToolContext;
}

const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);

/**
 * Runs one tool call through its persisted states:
 * pending → validating → executing → done | error | cancelled. Never throws.
 */
export async function runToolCall(call: ToolCallRequest, signal: AbortSignal, deps: ToolRunDeps): Promise<ToolCallResult> {
  const started = deps.clock.monotonic();
  const finish = async (state: ToolCallResult["state"], outcome: ToolOutcome, input: unknown): Promise<ToolCallResult> => {
    const durationMs = Math.round(deps.clock.monotonic() - started);
    await deps.store.setToolCallState(call.id, deps.sessionId, state, outcome.output);
    const success = state === "done" && !outcome.isError;
    deps.bus.publish(deps.sessionId, {
      type: "tool.end",
      toolName: call.name,
      toolCallId: call.id,
      toolInput: input,
      output: outcome.output,
      outputPreview: preview(outcome.output),
      success,
      durationMs,
    });
    return { call, output: outcome.output, attachments: outcome.attachments, success, state, durationMs };
  };

  await deps.store.setToolCallState(call.id, deps.sessionId, "validating");
  const parsed = parseArguments(call.arguments);
  const input = parsed.ok ? parsed.value : call.arguments;
  deps.bus.publish(deps.sessionId, { type: "tool.start", toolName: call.name, toolCallId: call.id, toolInput: input });
  if (!parsed.ok) {
    return finish("error", { output: formatToolError("VALIDATION_ERROR", `arguments are not valid JSON (${parsed.error}). Send a JSON object matching the tool's schema.`) }, input);
  }
  const resolution = deps.toolset.resolve(call.name);
  if (!resolution.ok) return finish("error", { output: formatToolError(resolution.code, resolution.message) }, input);
  const tool = resolution.tool;
  const problem = tool.validate(parsed.value);
  if (problem) return finish("error", { output: formatToolError("VALIDATION_ERROR", problem) }, input);
  if (signal.aborted) return finish("cancelled", { output: cancelledText() }, input);

  await deps.store.setToolCallState(call.id, deps.sessionId, "executing");
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  let cancelTimer: (() => void) | undefined;
  if (tool.timeoutMs) cancelTimer = deps.clock.setTimer(tool.timeoutMs, () => controller.abort(new ToolTimeout(tool.timeoutMs!)));
  try {
    const raw = await raceAbort(tool.execute(parsed.value, deps.makeContext(call, controller.signal)), controller.signal);
    const outcome: ToolOutcome = typeof raw === "string" ? { output: raw } : normaliseOutcome(raw);
    return await finish(outcome.isError ? "error" : "done", outcome, input);
  } catch (error) {
    if (controller.signal.reason instanceof ToolTimeout) {
      return finish("error", { output: formatToolError("TOOL_TIMEOUT", `tool "${call.name}" did not finish within ${tool.timeoutMs} ms and was stopped`) }, input);
    }
    if (signal.aborted) return finish("cancelled", { output: cancelledText() }, input);
    if (!isVeilError(error)) deps.log.error(`tool ${call.name} threw`, { error: errorMessage(error), stack: (error as Error)?.stack });
    return finish("error", { output: formatThrown(error).text }, input);
  } finally {
    cancelTimer?.();
    signal.removeEventListener("abort", onAbort);
  }
}

export function cancelledText(): string {
  return formatToolError("CANCELLED", "the run was cancelled before this tool call finished");
}

class ToolTimeout extends Error {
  constructor(readonly ms: number) {
    super(`tool timed out after ${ms} ms`);
  }
}

/** A tool that ignores its signal still frees the loop: give it a short grace, then move on. */
const ABORT_GRACE_MS = 2000;

function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    let grace: NodeJS.Timeout | undefined;
    const onAbort = () => {
      grace = setTimeout(() => reject(signal.reason), ABORT_GRACE_MS);
      grace.unref?.();
    };
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        clearTimeout(grace);
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error) => {
        clearTimeout(grace);
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

function parseArguments(text: string): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  const trimmed = text.trim();
  if (trimmed === "") return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch (error) {
    return { ok: false, error: errorMessage(error) };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, error: "expected a JSON object" };
  return { ok: true, value: stripForbidden(value as Record<string, unknown>) };
}

/** Prototype keys never reach a tool. */
function stripForbidden(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) if (!FORBIDDEN_KEYS.has(key)) out[key] = v;
  return out;
}

/** Accepts the manual's return shapes: string, { output }, { text, attachments }, { contentBlocks, displayText }. */
export function normaliseOutcome(raw: unknown): ToolOutcome {
  if (typeof raw === "string") return { output: raw };
  if (raw === undefined || raw === null) return { output: "(no output)" };
  if (typeof raw !== "object") return { output: String(raw) };
  const value = raw as Record<string, unknown>;
  if (typeof value.output === "string") return value as unknown as ToolOutcome;
  if (typeof value.text === "string") {
    return { output: value.text, attachments: Array.isArray(value.attachments) ? (value.attachments as Attachment[]) : undefined };
  }
  if (Array.isArray(value.contentBlocks)) {
    const attachments: Attachment[] = [];
    const texts: string[] = [];
    for (const block of value.contentBlocks as Record<string, unknown>[]) {
      if (block?.type === "text" && typeof block.text === "string") texts.push(block.text);
      else if (block?.type === "image_url" && typeof (block.image_url as { url?: string })?.url === "string") {
        attachments.push(dataUrlAttachment("image", (block.image_url as { url: string }).url));
      } else if (block?.type === "input_audio") {
        const audio = block.input_audio as { data?: string; format?: string };
        attachments.push({ type: "audio", media_type: `audio/${audio?.format ?? "wav"}`, data: audio?.data });
      }
    }
    const display = typeof value.displayText === "string" ? value.displayText : texts.join("\n");
    return { output: display, attachments };
  }
  return { output: JSON.stringify(raw) };
}

function dataUrlAttachment(type: "image", url: string): Attachment {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return match ? { type, media_type: match[1]!, data: match[2]! } : { type, media_type: "image/*", url };
}

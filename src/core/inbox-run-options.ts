import type { ReasoningConfig } from "../config/types.js";
import { compileSpec, type OutputSchema, type OutputSchemaSpec } from "../engines/output-schema.js";
import type { InboxItem } from "../store/store.js";

/**
 * Several nodes: a chat may arrive on a node that does not own its session, and the owner then
 * starts the run from the inbox row alone. The row's meta carries the call's per-call options
 * under this key until the message is delivered; the history keeps the message's own meta.
 */
const RUN_OPTIONS_KEY = "run_options";

export interface RunOptions {
  model?: string;
  reasoning?: ReasoningConfig;
  outputSchema?: OutputSchema;
  warmUp?: boolean;
  traceparent?: string;
}

/** The meta to store in the inbox: `meta` plus the options when the call has any. */
export function withRunOptions(meta: Record<string, unknown> | null, options: RunOptions): Record<string, unknown> | null {
  if (options.model === undefined && options.reasoning === undefined && options.outputSchema === undefined && options.warmUp !== false && options.traceparent === undefined) return meta;
  const stored = {
    ...(options.model !== undefined ? { model: options.model } : {}),
    ...(options.reasoning !== undefined ? { reasoning: options.reasoning } : {}),
    ...(options.outputSchema !== undefined ? { output_schema: { name: options.outputSchema.name, schema: options.outputSchema.schema } } : {}),
    ...(options.warmUp === false ? { warmUp: false } : {}),
    ...(options.traceparent !== undefined ? { traceparent: options.traceparent } : {}),
  };
  return { ...meta, [RUN_OPTIONS_KEY]: stored };
}

/** The options of the message that starts a run (none stored: the session's and agent's apply). */
export function runOptionsOf(item: InboxItem): RunOptions {
  const stored = item.meta?.[RUN_OPTIONS_KEY] as (Omit<RunOptions, "outputSchema"> & { output_schema?: OutputSchemaSpec }) | undefined;
  if (!stored || typeof stored !== "object") return {};
  return {
    ...(stored.model ? { model: stored.model } : {}),
    ...(stored.reasoning ? { reasoning: stored.reasoning } : {}),
    // It compiled when the chat arrived, on a node of the same build.
    ...(stored.output_schema ? { outputSchema: compileSpec(stored.output_schema) } : {}),
    ...(stored.warmUp === false ? { warmUp: false } : {}),
    ...(typeof stored.traceparent === "string" ? { traceparent: stored.traceparent } : {}),
  };
}
/** The meta the delivered user message keeps. */
export function withoutRunOptions(meta: Record<string, unknown> | null): Record<string, unknown> | null {
  if (!meta || !(RUN_OPTIONS_KEY in meta)) return meta;
  const { [RUN_OPTIONS_KEY]: _options, ...rest } = meta;
  return Object.keys(rest).length > 0 ? rest : null;
}

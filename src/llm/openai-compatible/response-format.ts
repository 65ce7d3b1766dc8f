import type { ProviderConfig, StructuredOutputMode } from "../../config/types.js";
import type { LlmRequest } from "../types.js";
import { providerHost } from "./provider-host.js";

export interface WireResponseFormat {
  type: "json_schema";
  json_schema: { name: string; schema: Record<string, unknown> };
}

/**
 * When an output schema goes out as `response_format`. OpenAI's API keeps calling tools under
 * one, so api.openai.com gets it on every call ("with-tools"). Elsewhere (vLLM, llama.cpp,
 * Ollama… constrain the whole output to the schema, which leaves no way to write a tool call)
 * it goes only on calls that offer no tools ("without-tools"); the setting says otherwise.
 */
export function structuredOutputFor(provider: Pick<ProviderConfig, "baseUrl" | "structuredOutput">): StructuredOutputMode {
  if (provider.structuredOutput) return provider.structuredOutput;
  return providerHost(provider.baseUrl) === "api.openai.com" ? "with-tools" : "without-tools";
}

/**
 * The call's response_format, and whether its tools stay. "without-tools": a repair asks only
 * for the answer's form (the turn's work is done), so it goes without tools and with the
 * format; any other call keeps its tools and goes without the format unless it has none.
 */
export function responseFormat(request: Pick<LlmRequest, "outputSchema" | "tools">, mode: StructuredOutputMode): { format?: WireResponseFormat; keepTools: boolean } {
  const output = request.outputSchema;
  if (!output || mode === "none") return { keepTools: true };
  const format: WireResponseFormat = { type: "json_schema", json_schema: { name: output.name, schema: output.schema } };
  if (mode === "with-tools") return { format, keepTools: true };
  const hasTools = (request.tools?.length ?? 0) > 0;
  if (!hasTools) return { format, keepTools: true };
  return output.repair ? { format, keepTools: false } : { keepTools: true };
}

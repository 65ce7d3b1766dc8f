/**
 * The `veilcli` package: what custom tools and embedders import
 * (`require('veilcli')` works from a tool folder, CONTRACT §8).
 */
export { callWithProviderFallback, extractMessage } from "./llm/provider-api.js";
export type { CallWithProviderFallbackOptions, ExtractedMessage } from "./llm/provider-api.js";
export { createRuntime } from "./runtime.js";
export type { Runtime, RuntimeOptions } from "./runtime.js";
export { startServer } from "./server/listen.js";
export { createApp } from "./server/app.js";
export { loadConfig } from "./config/load.js";
export { defineTool } from "./tools/define.js";
export { VeilError, ToolError, ERROR_STATUS } from "./errors.js";
export type { ErrorCode } from "./errors.js";
export type { VeilEvent, VeilEventBody, EventBus } from "./base/events.js";
export type { Store } from "./store/store.js";
export type { ToolContext, ToolOutcome, RegisteredTool } from "./tools/types.js";
export { VERSION } from "./version.js";

/** Context compaction: pure functions; the run loop stores and calls. See README "Compaction". */
export * from "./tokens.js";
export * from "./overflow.js";
export * from "./settings.js";
export * from "./plan.js";
export * from "./view.js";
export * from "./stub.js";
export * from "./prune.js";
export * from "./summary.js";
export * from "./compact.js";

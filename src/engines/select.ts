import type { Engine } from "./types.js";

/** The first engine that handles the key runs the turn (the native engine handles every key, so it goes last). */
export function selectEngine(engines: readonly Engine[], modelKey: string): Engine {
  const engine = engines.find((candidate) => candidate.handles(modelKey));
  if (!engine) throw new Error(`no engine handles model "${modelKey}"`);
  return engine;
}

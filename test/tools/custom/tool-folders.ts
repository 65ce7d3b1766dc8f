import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface ToolSpec {
  name: string;
  description?: string;
  properties?: Record<string, unknown>;
  required?: string[];
  timeout?: number;
  /** tool.json `touches`: input fields holding the paths a call writes. */
  touches?: string[];
  /** Body of `module.exports = async function execute(input) { … }`, or a full index.js with `raw`. */
  body?: string;
  raw?: string;
  /** tool.json text verbatim (for broken manifests). */
  manifestText?: string;
}

/** Writes `<dir>/<folder>/tool.json` + index.js; returns the folder. */
export function writeTool(dir: string, spec: ToolSpec, folderName = spec.name): string {
  const folder = join(dir, folderName);
  mkdirSync(folder, { recursive: true });
  const manifest =
    spec.manifestText ??
    JSON.stringify({
      name: spec.name,
      description: spec.description ?? `The ${spec.name} tool.`,
      input_schema: { type: "object", properties: spec.properties ?? {}, required: spec.required ?? [] },
      ...(spec.timeout !== undefined ? { timeout: spec.timeout } : {}),
      ...(spec.touches !== undefined ? { touches: spec.touches } : {}),
    });
  writeFileSync(join(folder, "tool.json"), manifest);
  const index = spec.raw ?? `'use strict';\nmodule.exports = async function execute(input) {\n${spec.body ?? "return 'ok';"}\n};\n`;
  writeFileSync(join(folder, "index.js"), index);
  return folder;
}

import { isAbsolute, resolve } from "node:path";
import type { RegisteredTool } from "./types.js";

/**
 * A tool defined outside the code (a custom tool's tool.json, an MCP server's entry) names
 * the input fields that hold the paths a call writes. Each such field's string (or each
 * string of its array) is one path, relative ones taken from the workspace; calls of one
 * response that share a path then run one after another, like the built-in file tools.
 */
export function touchesFromFields(fields: readonly string[]): NonNullable<RegisteredTool["touches"]> {
  return (input, scope) => {
    const paths: string[] = [];
    for (const field of fields) {
      const value = input[field];
      for (const path of Array.isArray(value) ? value : [value]) {
        if (typeof path === "string" && path.trim() !== "") paths.push(isAbsolute(path) ? resolve(path) : resolve(scope.workspace, path));
      }
    }
    return paths;
  };
}

/** Why a declared `touches` list cannot be used (null: it can): a list of the input's own property names. */
export function touchesProblem(touches: unknown, properties: Record<string, unknown> | undefined): string | null {
  if (!Array.isArray(touches) || touches.some((field) => typeof field !== "string" || field === "")) {
    return `"touches" must be a list of input property names (the fields holding paths the call writes), got ${JSON.stringify(touches)}`;
  }
  const unknown = (touches as string[]).filter((field) => !Object.hasOwn(properties ?? {}, field));
  return unknown.length > 0 ? `"touches" names ${unknown.map((f) => JSON.stringify(f)).join(", ")}, which the input schema does not have` : null;
}

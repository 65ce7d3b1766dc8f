import { parseArgs } from "node:util";

export type Command =
  | { kind: "serve"; workspace: string; host: string; port: number; secret?: string }
  | { kind: "run"; workspace: string; agent: string; model?: string; json: boolean; prompt: string }
  | { kind: "agents"; workspace: string; json: boolean }
  | { kind: "tools"; workspace: string; agent: string; json: boolean }
  | { kind: "sessions"; workspace: string; json: boolean }
  | { kind: "help"; text: string }
  | { kind: "version" };

export const USAGE = `veil — headless LLM agent runtime

Usage:
  veil serve [--workspace DIR] [--host 127.0.0.1] [--port 7700] [--secret S]
  veil run [--workspace DIR] [--agent NAME] [--model KEY] [--json] "prompt"
  veil agents [--workspace DIR] [--json]
  veil tools [--workspace DIR] [--agent NAME] [--json]
  veil sessions [--workspace DIR] [--json]
  veil mcp [--workspace DIR] [--agent NAME]
  veil --version
`;

export class UsageError extends Error {}

/** argv → a typed command. No side effects; `cwd` is passed in. */
export function parseCommand(argv: readonly string[], cwd: string): Command {
  const [name, ...rest] = argv;
  if (!name || name === "help" || name === "--help" || name === "-h") return { kind: "help", text: USAGE };
  if (name === "--version" || name === "-v" || name === "version") return { kind: "version" };
  const common = { workspace: { type: "string" }, json: { type: "boolean" }, help: { type: "boolean", short: "h" } } as const;
  const parse = <T extends Record<string, { type: "string" | "boolean"; short?: string }>>(options: T) => {
    try {
      return parseArgs({ args: [...rest], options: { ...common, ...options }, allowPositionals: true, strict: true });
    } catch (error) {
      throw new UsageError(`${(error as Error).message}\n\n${USAGE}`);
    }
  };
  switch (name) {
    case "serve": {
      const { values } = parse({ host: { type: "string" }, port: { type: "string" }, secret: { type: "string" } });
      const port = values.port === undefined ? 7700 : Number(values.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be an integer from 0 to 65535, got "${values.port}"`);
      return { kind: "serve", workspace: values.workspace ?? cwd, host: values.host ?? "127.0.0.1", port, secret: values.secret };
    }
    case "run": {
      const { values, positionals } = parse({ agent: { type: "string" }, model: { type: "string" } });
      const prompt = positionals.join(" ").trim();
      if (!prompt) throw new UsageError(`veil run needs a prompt\n\n${USAGE}`);
      return { kind: "run", workspace: values.workspace ?? cwd, agent: values.agent ?? "default", model: values.model, json: Boolean(values.json), prompt };
    }
    case "agents": {
      const { values } = parse({});
      return { kind: "agents", workspace: values.workspace ?? cwd, json: Boolean(values.json) };
    }
    case "tools": {
      const { values } = parse({ agent: { type: "string" } });
      return { kind: "tools", workspace: values.workspace ?? cwd, agent: values.agent ?? "default", json: Boolean(values.json) };
    }
    case "sessions": {
      const { values } = parse({});
      return { kind: "sessions", workspace: values.workspace ?? cwd, json: Boolean(values.json) };
    }
    default:
      throw new UsageError(`unknown command "${name}"\n\n${USAGE}`);
  }
}

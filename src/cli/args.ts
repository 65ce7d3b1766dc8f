import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { DURATION_PATTERN, parseDuration } from "../base/duration.js";

export type LogFormat = "text" | "json";

interface Common {
  workspace: string;
  /** Unset: text on a TTY, JSON otherwise. */
  logFormat?: LogFormat;
}

export type ServeCommand = Common & { kind: "serve"; host: string; port: number; secret?: string };
export type RunCommand = Common & {
  kind: "run";
  agent?: string;
  model?: string;
  json: boolean;
  /** The prompt from argv; undefined means "read it from stdin" (`-`, or no argument with a piped stdin). */
  prompt?: string;
  session?: string;
  continueLast: boolean;
  /** Absolute path of a JSON Schema file: the final answer must be JSON valid against it, printed alone. */
  outputSchema?: string;
};
export type ListCommand = Common & { kind: "agents"; json: boolean };
export type ToolsCommand = Common & { kind: "tools"; agent: string; json: boolean };
export type SkillsCommand = Common & { kind: "skills"; agent: string; json: boolean };
export type ScheduleAction = "list" | "create" | "runs" | "enable" | "disable" | "delete";
export type SchedulesCommand = Common & {
  kind: "schedules";
  action: ScheduleAction;
  json: boolean;
  /** runs, enable, disable, delete: the schedule. */
  id?: string;
  /** create: */
  prompt?: string;
  agent?: string;
  cron?: string;
  everySeconds?: number;
  session?: string;
  enabled?: boolean;
};
export type KeysCommand = Common & {
  kind: "keys";
  action: "create" | "list" | "revoke";
  json: boolean;
  /** revoke: the key id. */
  id?: string;
  /** create: the new key's fields, as POST /keys takes them. */
  create?: { name: string; scopes: string[]; agents?: string[]; requestsPerMinute?: number; budgetUsd?: number; expiresAt?: string };
};

export type SessionsCommand = Common & { kind: "sessions"; json: boolean; all: boolean; search?: string };
export type SessionsCloseCommand = Common & { kind: "sessions close"; ids: string[]; json: boolean };
export type SessionsPruneCommand = Common & { kind: "sessions prune"; idleMs: number; idle: string; dryRun: boolean; json: boolean };

export type Command =
  | ServeCommand
  | RunCommand
  | ListCommand
  | ToolsCommand
  | SkillsCommand
  | SessionsCommand
  | SessionsCloseCommand
  | SessionsPruneCommand
  | SchedulesCommand
  | KeysCommand
  | { kind: "help"; text: string }
  | { kind: "version" };

interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
  /** Placeholder shown in the usage, for string options. */
  value?: string;
  help: string;
}

interface CommandSpec {
  summary: string;
  args?: string;
  options: Record<string, OptionSpec>;
}

const WORKSPACE: OptionSpec = { type: "string", value: "DIR", help: "the workspace folder (default: the current folder)" };
const LOG_FORMAT: OptionSpec = { type: "string", value: "text|json", help: "log lines on stderr: short text (default on a TTY) or JSON (default otherwise)" };
const JSON_OUT: OptionSpec = { type: "boolean", help: "machine-readable JSON on stdout" };
const HELP: OptionSpec = { type: "boolean", short: "h", help: "print this help and exit" };

/** Every command, its options and their help: the one source of parsing and of the usage text. */
const COMMANDS: Record<string, CommandSpec> = {
  serve: {
    summary: "run the HTTP + SSE server for a workspace",
    options: {
      workspace: WORKSPACE,
      host: { type: "string", value: "ADDR", help: "interface to bind (default 127.0.0.1; 0.0.0.0 for every interface)" },
      port: { type: "string", value: "N", help: "port (default 7700; 0 picks a free one)" },
      secret: { type: "string", value: "S", help: "bearer secret (default: VEIL_SECRET, else .veil/secret, generated on first start)" },
      "log-format": LOG_FORMAT,
      help: HELP,
    },
  },
  run: {
    summary: "run one turn in process (no server) and stream the reply",
    args: '"prompt" | -',
    options: {
      workspace: WORKSPACE,
      agent: { type: "string", value: "NAME", help: "agent for a new session (default: default)" },
      model: { type: "string", value: "KEY", help: "model key for this turn" },
      session: { type: "string", value: "ID", help: "continue this session" },
      continue: { type: "boolean", short: "c", help: "continue the workspace's most recently active top-level session" },
      json: { type: "boolean", help: "print every event as one JSON line on stdout" },
      "output-schema": { type: "string", value: "FILE", help: "the final answer must be JSON valid against this JSON Schema; stdout gets that JSON alone" },
      "log-format": LOG_FORMAT,
      help: HELP,
    },
  },
  agents: { summary: "list the agents visible in the workspace", options: { workspace: WORKSPACE, json: JSON_OUT, "log-format": LOG_FORMAT, help: HELP } },
  tools: {
    summary: "list the tools an agent sees, with tier, state and description",
    options: { workspace: WORKSPACE, agent: { type: "string", value: "NAME", help: "agent (default: default)" }, json: JSON_OUT, "log-format": LOG_FORMAT, help: HELP },
  },
  skills: {
    summary: "list the skills an agent sees (SKILL.md folders): in effect, shadowed, broken",
    options: { workspace: WORKSPACE, agent: { type: "string", value: "NAME", help: "agent (default: default)" }, json: JSON_OUT, "log-format": LOG_FORMAT, help: HELP },
  },
  sessions: {
    summary: "list the workspace's open sessions, most recently active first",
    options: {
      workspace: WORKSPACE,
      all: { type: "boolean", help: "closed sessions too" },
      search: { type: "string", value: "TEXT", help: "only sessions whose title, id or agent contains TEXT (any case)" },
      json: JSON_OUT,
      "log-format": LOG_FORMAT,
      help: HELP,
    },
  },
  "sessions close": {
    summary: "close sessions: kill their shells, drop their timers, close their sub-agents",
    args: "ID...",
    options: { workspace: WORKSPACE, json: JSON_OUT, "log-format": LOG_FORMAT, help: HELP },
  },
  "sessions prune": {
    summary: "close every open top-level session with no activity for a while",
    options: {
      workspace: WORKSPACE,
      idle: { type: "string", value: "DURATION", help: "how long without activity: 90s, 30m, 24h, 7d, 2w (required)" },
      "dry-run": { type: "boolean", help: "only list what would be closed" },
      json: JSON_OUT,
      "log-format": LOG_FORMAT,
      help: HELP,
    },
  },
  schedules: {
    summary: "list, create, enable, disable or delete schedules, and show their runs",
    args: '[list | create "prompt" | runs ID | enable ID | disable ID | delete ID]',
    options: {
      workspace: WORKSPACE,
      agent: { type: "string", value: "NAME", help: "create: the agent that runs the prompt (default: default)" },
      cron: { type: "string", value: "EXPR", help: 'create: five-field cron expression, UTC (e.g. "0 9 * * MON")' },
      every: { type: "string", value: "SECONDS", help: "create: run every this many seconds (at least 1)" },
      session: { type: "string", value: "ID", help: "create: send every run to this session (default: a new session per run)" },
      disabled: { type: "boolean", help: "create: store it disabled" },
      json: JSON_OUT,
      "log-format": LOG_FORMAT,
      help: HELP,
    },
  },
  keys: {
    summary: "create, list or revoke the API keys of the workspace's store",
    args: "create | list | revoke ID",
    options: {
      workspace: WORKSPACE,
      name: { type: "string", value: "NAME", help: "create: what the key is for" },
      scopes: { type: "string", value: "LIST", help: "create: read, chat and/or admin, comma-separated" },
      agents: { type: "string", value: "LIST", help: "create: the only agents it may start, comma-separated (default: any)" },
      "requests-per-minute": { type: "string", value: "N", help: "create: past this many requests a minute, 429" },
      "budget-usd": { type: "string", value: "X", help: "create: once its sessions cost this much, chat answers 402" },
      "expires-at": { type: "string", value: "ISO", help: "create: the key stops working at this time" },
      json: JSON_OUT,
      "log-format": LOG_FORMAT,
      help: HELP,
    },
  },
  mcp: {
    summary: "serve an agent's built-in tools as an MCP server over stdio",
    options: { workspace: WORKSPACE, agent: { type: "string", value: "NAME", help: "agent whose tools and permissions apply (default: default)" }, help: HELP },
  },
};

function usageLine(name: string, spec: CommandSpec): string {
  const flags = Object.entries(spec.options)
    .filter(([option]) => option !== "help" && option !== "log-format")
    .map(([option, o]) => (o.type === "string" ? `[--${option} ${o.value}]` : `[--${option}]`));
  return `veil ${name} ${flags.join(" ")}${spec.args ? ` ${spec.args}` : ""}`;
}

export const USAGE = `veil — headless LLM agent runtime

Usage:
${Object.entries(COMMANDS)
  .map(([name, spec]) => `  ${usageLine(name, spec)}`)
  .join("\n")}
  veil --version
  veil COMMAND --help

Commands:
${Object.entries(COMMANDS)
  .map(([name, spec]) => `  ${name.padEnd(15)} ${spec.summary}`)
  .join("\n")}
`;

/** The help text of one command: usage line, summary and every option. */
export function commandUsage(name: string): string {
  const spec = COMMANDS[name];
  if (!spec) return USAGE;
  const options = Object.entries(spec.options).map(([option, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : "    "}--${option}${o.type === "string" ? ` ${o.value}` : ""}`;
    return `  ${flag.padEnd(28)} ${o.help}`;
  });
  return `Usage: ${usageLine(name, spec)}\n\n${spec.summary}\n\nOptions:\n${options.join("\n")}\n`;
}

/** A mistake on the command line: one line naming it, then the usage; exit 64. */
export class UsageError extends Error {
  constructor(
    readonly problem: string,
    readonly usage: string = USAGE,
  ) {
    super(`${problem}\n\n${usage}`);
  }
}

/** Commands with a sub-command ("sessions close") are found by their first two words. */
function commandName(argv: readonly string[]): [string | undefined, string[]] {
  const [first, second, ...rest] = argv;
  const two = `${first} ${second}`;
  if (second !== undefined && Object.hasOwn(COMMANDS, two)) return [two, rest];
  return [first, argv.slice(1)];
}

/** argv → a typed command. No side effects; `cwd` is passed in. */
export function parseCommand(argv: readonly string[], cwd: string): Command {
  const [name, rest] = commandName(argv);
  if (!name || name === "--help" || name === "-h") return { kind: "help", text: USAGE };
  if (name === "help") {
    const topic = rest.slice(0, 2).join(" ");
    const known = Object.hasOwn(COMMANDS, topic) ? topic : rest[0] && Object.hasOwn(COMMANDS, rest[0]) ? rest[0] : undefined;
    return { kind: "help", text: known ? commandUsage(known) : USAGE };
  }
  if (name === "--version" || name === "-v" || name === "version") return { kind: "version" };
  const spec = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!spec) throw new UsageError(`veil: unknown command ${JSON.stringify(name)}`);
  const usage = commandUsage(name);
  const { values, positionals } = parseOptions(name, spec, rest, usage);
  if (values.help) return { kind: "help", text: usage };
  const common: Common = { workspace: (values.workspace as string | undefined) ?? cwd, logFormat: logFormat(values["log-format"], name, usage) };
  const json = Boolean(values.json);
  if (name === "keys") return keysCommand(values, positionals, common, json, usage);
  if (name !== "run" && name !== "sessions close" && name !== "schedules" && positionals.length > 0) throw new UsageError(`veil ${name}: unexpected argument ${JSON.stringify(positionals[0])}`, usage);
  switch (name) {
    case "serve": {
      const raw = values.port as string | undefined;
      const port = raw === undefined ? 7700 : Number(raw);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`veil serve: --port must be an integer from 0 to 65535, got ${JSON.stringify(raw)}`, usage);
      return { kind: "serve", ...common, host: (values.host as string | undefined) ?? "127.0.0.1", port, secret: values.secret as string | undefined };
    }
    case "run": {
      const session = values.session as string | undefined;
      const continueLast = Boolean(values.continue);
      const agent = values.agent as string | undefined;
      if (session !== undefined && continueLast) throw new UsageError("veil run: give --session ID or --continue, not both", usage);
      if (agent !== undefined && (session !== undefined || continueLast)) throw new UsageError("veil run: --agent picks the agent of a new session; a continued session keeps its own", usage);
      const text = positionals.join(" ").trim();
      const prompt = positionals.length === 1 && positionals[0] === "-" ? undefined : text || undefined;
      const schemaFile = values["output-schema"] as string | undefined;
      return { kind: "run", ...common, agent, model: values.model as string | undefined, json, prompt, session, continueLast, ...(schemaFile !== undefined ? { outputSchema: resolve(cwd, schemaFile) } : {}) };
    }
    case "tools":
    case "skills":
      return { kind: name, ...common, agent: (values.agent as string | undefined) ?? "default", json };
    case "sessions":
      return { kind: "sessions", ...common, json, all: Boolean(values.all), search: (values.search as string | undefined)?.trim() || undefined };
    case "sessions close":
      if (positionals.length === 0) throw new UsageError("veil sessions close: name the sessions to close (their ids, as veil sessions lists them)", usage);
      return { kind: "sessions close", ...common, ids: positionals, json };
    case "sessions prune": {
      const idle = values.idle as string | undefined;
      if (idle === undefined) throw new UsageError("veil sessions prune: --idle DURATION is required (e.g. --idle 7d)", usage);
      if (!new RegExp(DURATION_PATTERN).test(idle)) throw new UsageError(`veil sessions prune: --idle takes a number and a unit (90s, 30m, 24h, 7d, 2w), got ${JSON.stringify(idle)}`, usage);
      return { kind: "sessions prune", ...common, idle: idle.trim(), idleMs: parseDuration(idle, "--idle"), dryRun: Boolean(values["dry-run"]), json };
    }
    case "schedules":
      return { ...schedulesCommand(positionals, values, usage), ...common, json };
    default:
      return { kind: "agents", ...common, json };
  }
}

const SCHEDULE_ACTIONS: readonly ScheduleAction[] = ["list", "create", "runs", "enable", "disable", "delete"];
const CREATE_ONLY = ["agent", "cron", "every", "session", "disabled"] as const;

function schedulesCommand(positionals: string[], values: Record<string, unknown>, usage: string): Omit<SchedulesCommand, keyof Common | "json"> {
  const [first = "list", ...rest] = positionals;
  const action = first as ScheduleAction;
  if (!SCHEDULE_ACTIONS.includes(action)) throw new UsageError(`veil schedules: unknown action ${JSON.stringify(first)} (one of ${SCHEDULE_ACTIONS.join(", ")})`, usage);
  const stray = CREATE_ONLY.find((option) => values[option] !== undefined);
  if (action !== "create" && stray) throw new UsageError(`veil schedules ${action}: --${stray} is for create`, usage);
  if (action === "list") {
    if (rest.length > 0) throw new UsageError(`veil schedules list: unexpected argument ${JSON.stringify(rest[0])}`, usage);
    return { kind: "schedules", action };
  }
  if (action !== "create") {
    if (rest.length !== 1) throw new UsageError(`veil schedules ${action}: give one schedule id`, usage);
    return { kind: "schedules", action, id: rest[0] };
  }
  const prompt = rest.join(" ").trim();
  if (!prompt) throw new UsageError('veil schedules create: give the prompt, e.g. veil schedules create --every 3600 "check the build"', usage);
  const cron = values.cron as string | undefined;
  const every = values.every as string | undefined;
  if ((cron === undefined) === (every === undefined)) throw new UsageError("veil schedules create: give one of --cron EXPR and --every SECONDS", usage);
  const everySeconds = every === undefined ? undefined : Number(every);
  if (everySeconds !== undefined && !Number.isFinite(everySeconds)) throw new UsageError(`veil schedules create: --every must be a number of seconds, got ${JSON.stringify(every)}`, usage);
  return { kind: "schedules", action, prompt, agent: (values.agent as string | undefined) ?? "default", cron, everySeconds, session: values.session as string | undefined, enabled: !values.disabled };
}

function keysCommand(values: Record<string, unknown>, positionals: string[], common: Common, json: boolean, usage: string): KeysCommand {
  const [action, ...rest] = positionals;
  const list = (raw: unknown) => (raw === undefined ? undefined : String(raw).split(",").map((s) => s.trim()).filter(Boolean));
  const number = (option: string) => {
    const raw = values[option];
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!Number.isFinite(n) || String(raw).trim() === "") throw new UsageError(`veil keys: --${option} must be a number, got ${JSON.stringify(raw)}`, usage);
    return n;
  };
  const extra = action === "revoke" ? rest.slice(1) : rest;
  if (extra.length > 0) throw new UsageError(`veil keys: unexpected argument ${JSON.stringify(extra[0])}`, usage);
  switch (action) {
    case "list":
      return { kind: "keys", action, ...common, json };
    case "revoke":
      if (!rest[0]) throw new UsageError("veil keys revoke: give the key's id (veil keys list shows them)", usage);
      return { kind: "keys", action, ...common, json, id: rest[0] };
    case "create": {
      const name = values.name as string | undefined;
      const scopes = list(values.scopes);
      if (!name || !scopes?.length) throw new UsageError("veil keys create: give --name NAME and --scopes read,chat,admin", usage);
      const agents = list(values.agents);
      const requestsPerMinute = number("requests-per-minute");
      const budgetUsd = number("budget-usd");
      const expiresAt = values["expires-at"] as string | undefined;
      return {
        kind: "keys",
        action,
        ...common,
        json,
        create: { name, scopes, ...(agents ? { agents } : {}), ...(requestsPerMinute !== undefined ? { requestsPerMinute } : {}), ...(budgetUsd !== undefined ? { budgetUsd } : {}), ...(expiresAt ? { expiresAt } : {}) },
      };
    }
    default:
      throw new UsageError(action === undefined ? "veil keys: give create, list or revoke ID" : `veil keys: unknown action ${JSON.stringify(action)} (create, list or revoke)`, usage);
  }
}

function parseOptions(name: string, spec: CommandSpec, args: string[], usage: string) {
  const options = Object.fromEntries(Object.entries(spec.options).map(([option, o]) => [option, { type: o.type, ...(o.short ? { short: o.short } : {}) }]));
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(`veil ${name}: ${describeParseError(error as Error & { code?: string }, spec)}`, usage);
  }
}

/** node:util's messages quote options oddly and suggest `--`; say the one thing that is wrong. */
function describeParseError(error: Error & { code?: string }, spec: CommandSpec): string {
  const option = /'(-{1,2}[^' ]+)/.exec(error.message)?.[1];
  switch (error.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `unknown option ${option ?? error.message}`;
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE": {
      const key = option?.replace(/^-+/, "") ?? "";
      const known = Object.hasOwn(spec.options, key) ? spec.options[key] : undefined;
      return known?.type === "string" ? `option --${key} needs a value (--${key} ${known.value})` : `option ${option ?? ""} takes no value`;
    }
    default:
      return error.message;
  }
}

function logFormat(raw: unknown, name: string, usage: string): LogFormat | undefined {
  if (raw === undefined) return undefined;
  if (raw === "text" || raw === "json") return raw;
  throw new UsageError(`veil ${name}: --log-format must be text or json, got ${JSON.stringify(raw)}`, usage);
}

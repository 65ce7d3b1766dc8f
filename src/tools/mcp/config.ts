import { readFileSync, statSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { findUnknownKeys, type UnknownKeyNotice } from "../../config/unknown-keys.js";

/** A checked MCP server entry, ready to connect. */
export interface McpServerSpec {
  name: string;
  transport: { kind: "stdio"; command: string; args: string[]; env: Record<string, string>; cwd: string } | { kind: "http" | "sse"; url: string; headers: Record<string, string> };
  startupTimeoutMs: number;
  callTimeoutMs: number;
  /** Per tool of the server (its own name): the input fields holding the paths a call writes (entry `touches`). */
  touches?: Record<string, string[]>;
  /** "settings" or the path of the .mcp.json that defined it. */
  origin: string;
  /** Changes when the entry changes (the server is then restarted with the new entry). */
  fingerprint: string;
}

/** A server entry (or a whole .mcp.json) that cannot be used, and why. */
export interface McpConfigProblem {
  server: string | null;
  file?: string;
  reason: string;
}

export const DEFAULT_STARTUP_TIMEOUT_SECONDS = 30;
export const DEFAULT_CALL_TIMEOUT_SECONDS = 120;
const TYPES = ["stdio", "http", "sse"] as const;

export interface McpConfigResult {
  servers: McpServerSpec[];
  problems: McpConfigProblem[];
  /** Keys of `.mcp.json` or of settings' `mcpServers` entries that Veil does not read (the entries still work). */
  unknownKeys: UnknownKeyNotice[];
}

/** The keys of a server entry Veil reads (checkEntry); `env` and `headers` hold free-form names. */
const ENTRY_KEYS = ["type", "command", "args", "env", "cwd", "url", "headers", "startupTimeoutSeconds", "callTimeoutSeconds", "touches"];
const SERVERS_SHAPE = { additionalProperties: { properties: Object.fromEntries(ENTRY_KEYS.map((key) => [key, {}])) } };
/** `.mcp.json` and settings alike: `{ "mcpServers": { "<name>": <entry> } }`, walked by findUnknownKeys. */
const MCP_FILE_SHAPE = { properties: { mcpServers: SERVERS_SHAPE } };

/**
 * Merges `settings.mcpServers` over `<workspace>/.mcp.json` (settings win on the same
 * name) and checks each entry on its own. `${VAR}` and `${VAR:-default}` in command,
 * args, env, url and headers are expanded from `env` (as Claude Code does). Never throws.
 */
export function resolveMcpServers(options: { settingsServers: Record<string, unknown> | undefined; mcpJson: McpJsonRead; workspace: string; env: Record<string, string | undefined> }): McpConfigResult {
  const problems: McpConfigProblem[] = [];
  if (options.mcpJson.problem) problems.push(options.mcpJson.problem);
  const entries = new Map<string, { raw: unknown; origin: string }>();
  for (const [name, raw] of Object.entries(options.mcpJson.servers)) entries.set(name, { raw, origin: options.mcpJson.path });
  for (const [name, raw] of Object.entries(options.settingsServers ?? {})) entries.set(name, { raw, origin: "settings" });
  const unknownKeys = [
    ...options.mcpJson.unknownKeys.map((key) => ({ file: options.mcpJson.path, ...key })),
    ...findUnknownKeys({ mcpServers: options.settingsServers ?? {} }, MCP_FILE_SHAPE).map((key) => ({ file: "settings.json", ...key })),
  ];
  const servers: McpServerSpec[] = [];
  for (const [name, { raw, origin }] of entries) {
    const checked = checkEntry(name, raw, origin, options.workspace, options.env);
    if (typeof checked === "string") problems.push({ server: name, ...(origin === "settings" ? {} : { file: origin }), reason: checked });
    else servers.push(checked);
  }
  return { servers, problems, unknownKeys };
}

export interface McpJsonRead {
  path: string;
  /** (size, mtime) of the file, "" when absent: lets callers skip re-parsing an unchanged file. */
  stamp: string;
  servers: Record<string, unknown>;
  problem?: McpConfigProblem;
  /** Keys Veil does not read, found when the file was parsed. */
  unknownKeys: ReturnType<typeof findUnknownKeys>;
}

/** Reads `<workspace>/.mcp.json`; a missing file is no servers, a malformed one a problem. Never throws. */
export function readMcpJson(workspace: string, previous?: McpJsonRead): McpJsonRead {
  const path = join(workspace, ".mcp.json");
  let stamp = "";
  try {
    const info = statSync(path);
    stamp = `${info.size}:${info.mtimeMs}`;
  } catch {
    return { path, stamp, servers: {}, unknownKeys: [] };
  }
  if (previous && previous.path === path && previous.stamp === stamp) return previous;
  const fail = (reason: string): McpJsonRead => ({ path, stamp, servers: {}, unknownKeys: [], problem: { server: null, file: path, reason: `${path}: ${reason}` } });
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    return fail(`invalid JSON (${(error as Error).message}); no server from this file is started`);
  }
  if (!isObject(data)) return fail(`must hold a JSON object { "mcpServers": { … } }`);
  const unknownKeys = findUnknownKeys(data, MCP_FILE_SHAPE);
  if (data.mcpServers === undefined) return { path, stamp, servers: {}, unknownKeys };
  if (!isObject(data.mcpServers)) return fail(`"mcpServers" must be an object of server entries by name`);
  return { path, stamp, servers: data.mcpServers, unknownKeys };
}

function checkEntry(name: string, raw: unknown, origin: string, workspace: string, env: Record<string, string | undefined>): McpServerSpec | string {
  const where = `MCP server "${name}"${origin === "settings" ? " (settings.json mcpServers)" : ` (${origin})`}`;
  if (!/^[A-Za-z0-9_.-]+$/.test(name)) return `${where}: the name may hold only letters, digits, "_", "-" and "."`;
  if (!isObject(raw)) return `${where}: the entry must be an object`;
  const expand = (text: string) => expandVars(text, env);
  const type = raw.type ?? (raw.url !== undefined && raw.command === undefined ? "http" : "stdio");
  if (typeof type !== "string" || !(TYPES as readonly string[]).includes(type)) {
    return `${where}: unknown type ${JSON.stringify(type)} (use "stdio" with a command, "http" or "sse" with a url)`;
  }
  const timeouts = checkTimeouts(raw);
  if (typeof timeouts === "string") return `${where}: ${timeouts}`;
  let transport: McpServerSpec["transport"];
  if (type === "stdio") {
    if (typeof raw.command !== "string" || raw.command.trim() === "") return `${where}: "command" must be a non-empty string`;
    if (raw.args !== undefined && !(Array.isArray(raw.args) && raw.args.every((a) => typeof a === "string"))) return `${where}: "args" must be an array of strings`;
    if (raw.env !== undefined && !isStringRecord(raw.env)) return `${where}: "env" must be an object of string values`;
    if (raw.cwd !== undefined && typeof raw.cwd !== "string") return `${where}: "cwd" must be a string`;
    const cwd = raw.cwd ? expand(raw.cwd) : workspace;
    transport = {
      kind: "stdio",
      command: expand(raw.command),
      args: ((raw.args as string[] | undefined) ?? []).map(expand),
      env: mapValues((raw.env as Record<string, string> | undefined) ?? {}, expand),
      cwd: isAbsolute(cwd) ? cwd : join(workspace, cwd),
    };
  } else {
    if (typeof raw.url !== "string") return `${where}: "url" must be a string`;
    const url = expand(raw.url);
    if (!/^https?:\/\//i.test(url) || !URL.canParse(url)) return `${where}: "url" must be an http(s) URL, got ${JSON.stringify(url)}`;
    if (raw.headers !== undefined && !isStringRecord(raw.headers)) return `${where}: "headers" must be an object of string values`;
    transport = { kind: type as "http" | "sse", url, headers: mapValues((raw.headers as Record<string, string> | undefined) ?? {}, expand) };
  }
  const touches = raw.touches;
  if (touches !== undefined && !(isObject(touches) && Object.values(touches).every((fields) => Array.isArray(fields) && fields.every((f) => typeof f === "string" && f !== "")))) {
    return `${where}: "touches" must map tool names to lists of input property names (the fields holding paths a call writes)`;
  }
  const declared = touches === undefined ? {} : { touches: touches as Record<string, string[]> };
  return { name, transport, ...timeouts, ...declared, origin, fingerprint: JSON.stringify(transport) + JSON.stringify(timeouts) + JSON.stringify(declared) };
}

function checkTimeouts(raw: Record<string, unknown>): { startupTimeoutMs: number; callTimeoutMs: number } | string {
  const out = { startupTimeoutMs: DEFAULT_STARTUP_TIMEOUT_SECONDS * 1000, callTimeoutMs: DEFAULT_CALL_TIMEOUT_SECONDS * 1000 };
  for (const [key, target] of [
    ["startupTimeoutSeconds", "startupTimeoutMs"],
    ["callTimeoutSeconds", "callTimeoutMs"],
  ] as const) {
    const value = raw[key];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) return `"${key}" must be a positive number of seconds, got ${JSON.stringify(value)}`;
    out[target] = Math.round(value * 1000);
  }
  return out;
}

/** `${VAR}` and `${VAR:-default}`; an unset variable without a default becomes "". */
export function expandVars(text: string, env: Record<string, string | undefined>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_match, name: string, fallback: string | undefined) => env[name] ?? fallback ?? "");
}

function mapValues(record: Record<string, string>, fn: (value: string) => string): Record<string, string> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, fn(value)]));
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return isObject(value) && Object.values(value).every((v) => typeof v === "string");
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

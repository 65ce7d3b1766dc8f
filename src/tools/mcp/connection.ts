/**
 * The only module that loads the MCP SDK's client. It is imported lazily (by
 * server-handle.ts, when a configured server is first needed), so a runtime
 * without MCP servers never pays for the SDK's import.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { CallToolResultSchema, ErrorCode, McpError, ToolListChangedNotificationSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { VERSION } from "../../version.js";
import type { McpServerSpec } from "./config.js";
import { VeilStdioTransport } from "./stdio-transport.js";

export type { CallToolResult };

/** tools/list answers are read loosely: a tool with a bad schema is reported alone, not the whole server. */
const LooseToolList = z.looseObject({ tools: z.array(z.unknown()), nextCursor: z.string().optional() });
/** A server that pages forever is cut here. */
const MAX_LIST_PAGES = 50;

export interface McpConnection {
  listTools(timeoutMs: number): Promise<unknown[]>;
  callTool(name: string, args: Record<string, unknown>, options: { signal: AbortSignal; timeoutMs: number }): Promise<CallToolResult>;
  close(): Promise<void>;
  /** Why the link ended, if the transport knows (exit code, stderr, stdout noise). */
  describeFailure(): string | null;
  pid?: number;
}

export interface ConnectOptions {
  /** Base environment of a stdio server; the entry's own `env` is merged over it. */
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** The link ended without close() being called (a crash, a dropped session). */
  onClosed(): void;
  onToolsChanged(): void;
  onNoise(message: string): void;
}

/** Opens and initializes one client. Rejects (with the transport's explanation) on failure. */
export async function openConnection(spec: McpServerSpec, options: ConnectOptions): Promise<McpConnection> {
  const stdio = spec.transport.kind === "stdio" ? new VeilStdioTransport({ serverName: spec.name, command: spec.transport.command, args: spec.transport.args, env: { ...options.env, ...spec.transport.env }, cwd: spec.transport.cwd }) : null;
  const transport: Transport =
    stdio ??
    (spec.transport.kind === "sse"
      ? new SSEClientTransport(new URL((spec.transport as { url: string }).url), { requestInit: { headers: (spec.transport as { headers: Record<string, string> }).headers } })
      : new StreamableHTTPClientTransport(new URL((spec.transport as { url: string }).url), { requestInit: { headers: (spec.transport as { headers: Record<string, string> }).headers } }));
  const client = new Client({ name: "veil", version: VERSION }, { capabilities: {} });
  let closing = false;
  client.onerror = (error) => {
    if (/non-JSON/.test(error.message)) options.onNoise(error.message);
  };
  client.onclose = () => {
    if (!closing) options.onClosed();
  };
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => options.onToolsChanged());
  const describeFailure = () => stdio?.describeFailure() ?? null;
  try {
    await client.connect(transport, { timeout: options.timeoutMs });
  } catch (error) {
    const why = describeFailure() ?? describeConnectError(error, options.timeoutMs);
    closing = true;
    stdio?.kill();
    // Not awaited: a server that ignores stdin's end takes seconds to kill, and nobody should wait for that.
    void client.close().catch(() => undefined);
    throw new Error(why, { cause: error });
  }
  return {
    pid: stdio?.pid,
    describeFailure,
    async listTools(timeoutMs) {
      const tools: unknown[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const result = await client.request({ method: "tools/list", params: cursor ? { cursor } : {} }, LooseToolList, { timeout: timeoutMs });
        tools.push(...result.tools);
        cursor = result.nextCursor;
        if (!cursor) break;
      }
      return tools;
    },
    callTool(name, args, { signal, timeoutMs }) {
      return client.request({ method: "tools/call", params: { name, arguments: args } }, CallToolResultSchema, { signal, timeout: timeoutMs }) as Promise<CallToolResult>;
    },
    async close() {
      closing = true;
      await client.close().catch(() => undefined);
    },
  };
}

export type FailureKind = "timeout" | "closed" | "server" | "transport";

/** timeout: no answer in time; closed: the link dropped; server: the server answered with a JSON-RPC error; transport: anything else (HTTP errors, fetch failures). */
export function classifyFailure(error: unknown): { kind: FailureKind; message: string } {
  if (error instanceof McpError) {
    if (error.code === ErrorCode.RequestTimeout) return { kind: "timeout", message: error.message };
    if (error.code === ErrorCode.ConnectionClosed) return { kind: "closed", message: error.message };
    return { kind: "server", message: `error ${error.code}: ${error.message.replace(/^MCP error -?\d+: /, "")}` };
  }
  return { kind: "transport", message: error instanceof Error ? error.message : String(error) };
}

function describeConnectError(error: unknown, timeoutMs: number): string {
  const { kind, message } = classifyFailure(error);
  if (kind === "timeout") return `did not answer initialize within ${timeoutMs / 1000} s`;
  if (kind === "closed") return "closed the connection during initialize";
  const status = (error as { code?: unknown })?.code;
  const cause = (error as { cause?: { message?: string; code?: string } })?.cause;
  return `could not connect: ${typeof status === "number" && status >= 100 ? `HTTP ${status}: ` : ""}${message}${cause?.message ? ` (${cause.code ?? cause.message})` : ""}`;
}

/**
 * Messages between the server and a custom-tool child process (node IPC, JSON).
 * One child runs one call at a time; every message names the call it belongs to.
 */

/** What the child needs besides the model's input to build the injected `_` fields. */
export interface CallContext {
  cwd: string;
  agent: unknown;
  sessionId: string;
  /** Settings with every secret removed (see sanitizeSettings). */
  settings: unknown;
  modelKey: string;
}

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  code?: string;
}

/** Parent → child. */
export type ParentMessage =
  | {
      t: "call";
      id: number;
      /** Absolute path of index.js. */
      file: string;
      /** Changes whenever index.js changes on disk; the child reloads the module then. */
      version: string;
      input: Record<string, unknown>;
      context: CallContext;
    }
  | { t: "rpc-result"; id: number; rpcId: number; ok: true; value: unknown }
  | { t: "rpc-result"; id: number; rpcId: number; ok: false; error: SerializedError }
  | { t: "rpc-chunk"; id: number; rpcId: number; text: string };

/** The services a child may ask the parent for. */
export type RpcMethod = "remote" | "llm";

/** Child → parent. */
export type ChildMessage =
  | { t: "ready"; pid: number }
  | { t: "result"; id: number; ok: true; value: unknown }
  | { t: "result"; id: number; ok: false; error: SerializedError }
  | { t: "chunk"; id: number; chunk: string }
  | { t: "rpc"; id: number; rpcId: number; method: RpcMethod; params: Record<string, unknown> }
  /** An exception escaped the running call's promise (timer, listener); the child exits after this. */
  | { t: "fatal"; id: number; error: SerializedError }
  /** An exception escaped after a call had finished; logged, the process carries on. */
  | { t: "stray"; error: SerializedError };

export function serializeError(error: unknown): SerializedError {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { name: error.name, message: error.message, stack: error.stack, code: typeof code === "string" ? code : undefined };
  }
  return { name: "Error", message: typeof error === "string" ? error : safeJson(error) };
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** The argument naming a sandboxed tool process's proxy socket (network "allowlist"): it runs the forwarder before it is ready. */
export const PROXY_SOCKET_ARG = "--veil-proxy-socket=";

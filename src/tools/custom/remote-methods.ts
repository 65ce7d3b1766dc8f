/**
 * The service behind `_remoteMethodExecution` (README "Wake-ups and remote methods").
 * Registered by the server as `services.remoteMethods`; resolves with the UI's
 * `result`, rejects on timeout or abort.
 */
export interface RemoteMethods {
  execute(req: { sessionId: string; method: string; data: unknown; timeoutMs?: number; signal?: AbortSignal }): Promise<unknown>;
}

export function isRemoteMethods(value: unknown): value is RemoteMethods {
  return typeof value === "object" && value !== null && typeof (value as RemoteMethods).execute === "function";
}

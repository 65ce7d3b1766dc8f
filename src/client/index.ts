/**
 * `veilcli/client`: a typed client of Veil's HTTP API for browsers and Node (fetch only).
 * It imports no server, core or store code; event and usage types come from `src/base`.
 */
export { VeilApiError, VeilClient, type VeilClientOptions } from "./client.js";
export { parseSse, type SseMessage } from "./sse.js";
export type * from "./types.js";

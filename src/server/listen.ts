import { serve, type ServerType } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import type { Runtime } from "../runtime.js";
import { createApp } from "./app.js";
import { allowedHosts } from "./auth.js";
import type { ServerState } from "./context.js";
import { useSpawnHelper } from "../tools/shared/shell/spawn-helper.js";
import { watchLoopDelay } from "./loop-delay.js";

export interface StartedServer {
  url: string;
  host: string;
  port: number;
  state: ServerState;
  close(): Promise<void>;
}

/** Binds the app (127.0.0.1 by default). close() stops accepting, ends streams and closes the runtime. */
export async function startServer(options: { runtime: Runtime; secret: string; host?: string; port?: number; heartbeatMs?: number; closeRuntime?: boolean }): Promise<StartedServer> {
  const host = options.host ?? "127.0.0.1";
  // Many sessions' shells: started by a small helper process, so this big one never forks.
  useSpawnHelper();
  const state: ServerState = { runtime: options.runtime, secret: options.secret, allowedHosts: new Set(), heartbeatMs: options.heartbeatMs };
  const app = createApp(state);
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port: options.port ?? 7700 }, () => resolve(s));
    s.once("error", reject);
  });
  const port = (server.address() as AddressInfo).port;
  // Bound to every interface, clients name the machine however they reach it; the bearer
  // secret still guards every route, and Origin must be same-origin.
  state.allowedHosts = host === "0.0.0.0" || host === "::" ? null : allowedHosts(host, port);
  options.runtime.selfAddress.set(host, port);
  const shownHost = host.includes(":") ? `[${host}]` : host;
  const writeLoopDelay = watchLoopDelay();
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${port}`,
    host,
    port,
    state,
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
        });
        writeLoopDelay();
        if (options.closeRuntime !== false) await options.runtime.close();
      })();
      return closing;
    },
  };
}

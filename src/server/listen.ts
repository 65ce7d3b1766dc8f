import { serve, type ServerType } from "@hono/node-server";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { VeilError } from "../errors.js";
import type { Runtime } from "../runtime.js";
import { createApp } from "./app.js";
import { allowedHosts } from "./auth.js";
import type { ServerState } from "./context.js";
import { useSpawnHelper } from "../tools/shared/shell/spawn-helper.js";
import { watchLoopDelay } from "./loop-delay.js";
import { closeIdleConnectionsAfterReading } from "./keep-alive.js";

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
  const state: ServerState = { runtime: options.runtime, secret: options.secret, allowedHosts: new Set(), heartbeatMs: options.heartbeatMs };
  const app = createApp(state);
  const requestedPort = options.port ?? 7700;
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port: requestedPort }, () => resolve(s));
    s.once("error", (error) => reject(listenError(error as NodeJS.ErrnoException, host, requestedPort)));
  });
  // Many sessions' shells: started by a small helper process, so this big one never forks. Forked
  // once the port is bound (forking blocks this process for a moment; /health need not wait for it).
  useSpawnHelper();
  closeIdleConnectionsAfterReading(server as Server);
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

/** Ports below this need privileges (root or CAP_NET_BIND_SERVICE) on Linux and macOS. */
const FIRST_UNPRIVILEGED_PORT = 1024;

/** A bind failure as one typed error that names the address and the way out; other errors pass through. */
export function listenError(error: NodeJS.ErrnoException, host: string, port: number): unknown {
  const address = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  const freePort = "or --port 0 to have a free one picked";
  switch (error.code) {
    case "EADDRINUSE":
      return new VeilError("PORT_IN_USE", `port ${port} is already in use on ${host} (another veil serve?); choose another with --port N, ${freePort}`, { cause: error });
    case "EACCES":
      return new VeilError(
        "PORT_NOT_PERMITTED",
        port > 0 && port < FIRST_UNPRIVILEGED_PORT
          ? `not allowed to listen on ${address}: ports below ${FIRST_UNPRIVILEGED_PORT} need root or CAP_NET_BIND_SERVICE; use --port ${FIRST_UNPRIVILEGED_PORT} or above, ${freePort}`
          : `not allowed to listen on ${address} (the system refused: EACCES); try another port with --port N, ${freePort}`,
        { cause: error },
      );
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
    case "EAI_AGAIN": {
      const why = error.code === "EADDRNOTAVAIL" ? "is not an address of this machine" : "cannot be resolved";
      return new VeilError("CONFIG_ERROR", `cannot listen on ${address}: ${JSON.stringify(host)} ${why}; use --host 127.0.0.1 (this machine only) or --host 0.0.0.0 (every interface)`, { cause: error });
    }
    default:
      return error;
  }
}

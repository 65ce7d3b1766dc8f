import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { rm } from "node:fs/promises";
import { hostAllowed } from "./policy.js";

/**
 * Veil's allowlist proxy, one listener per sandboxed process on a unix socket that the
 * sandbox reaches through its forwarder (forward.ts): HTTP forwarding (`GET http://host/…`)
 * and CONNECT tunnels, to any port of an allowed host. Anything else is answered 403 and
 * reported. Names are checked as the client sent them, before any DNS lookup.
 */
export interface ProxyOptions {
  allowHosts: readonly string[];
  /** A refused request: the host and port it asked for. */
  onBlocked(host: string, port: number): void;
}

export interface ProxyListener {
  readonly socketPath: string;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(["proxy-connection", "proxy-authorization", "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"]);

/** `host:port` of a CONNECT target, IPv6 in brackets. */
export function parseAuthority(authority: string): { host: string; port: number } | null {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(authority.trim());
  if (!match) return null;
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return null;
  return { host: match[1]!.replace(/^\[(.*)\]$/, "$1"), port };
}

function refuse(socket: Duplex, status: string, body: string): void {
  socket.end(`HTTP/1.1 ${status}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

const blockedText = (host: string, port: number) => `Veil sandbox: ${host}:${port} is not in sandbox.allowHosts\n`;

export async function listenProxy(socketPath: string, options: ProxyOptions): Promise<ProxyListener> {
  const open = new Set<Socket | Duplex>();
  const track = (socket: Socket | Duplex) => {
    open.add(socket);
    socket.once("close", () => open.delete(socket));
  };
  const server = createServer((req, res) => forward(req, res, options, track));
  server.on("connection", track);
  server.on("connect", (req: IncomingMessage, client: Duplex, head: Buffer) => tunnel(req, client, head, options, track));
  server.on("clientError", (_error, socket) => socket.destroy());
  await rm(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    socketPath,
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(socketPath, { force: true });
    },
  };
}

function tunnel(req: IncomingMessage, client: Duplex, head: Buffer, options: ProxyOptions, track: (socket: Socket | Duplex) => void): void {
  client.on("error", () => client.destroy());
  const target = parseAuthority(req.url ?? "");
  if (!target) return refuse(client, "400 Bad Request", "CONNECT needs host:port\n");
  if (!hostAllowed(target.host, options.allowHosts)) {
    options.onBlocked(target.host, target.port);
    return refuse(client, "403 Forbidden", blockedText(target.host, target.port));
  }
  const upstream = connect(target.port, target.host);
  track(upstream);
  upstream.once("connect", () => {
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.once("error", (error) => {
    if (upstream.connecting) refuse(client, "502 Bad Gateway", `Veil sandbox proxy: ${target.host}:${target.port}: ${error.message}\n`);
    else client.destroy();
  });
  client.once("close", () => upstream.destroy());
}

function forward(req: IncomingMessage, res: ServerResponse, options: ProxyOptions, track: (socket: Socket | Duplex) => void): void {
  let url: URL;
  try {
    url = new URL(req.url ?? "");
  } catch {
    res.writeHead(400, { "content-type": "text/plain" }).end("a proxy request needs an absolute http:// URL\n");
    return;
  }
  if (url.protocol !== "http:") {
    res.writeHead(400, { "content-type": "text/plain" }).end(`only http:// is forwarded; use CONNECT for ${url.protocol}\n`);
    return;
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = url.port ? Number(url.port) : 80;
  if (!hostAllowed(host, options.allowHosts)) {
    options.onBlocked(host, port);
    res.writeHead(403, { "content-type": "text/plain" }).end(blockedText(host, port));
    return;
  }
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
  const upstream = httpRequest({ host, port, method: req.method, path: `${url.pathname}${url.search}`, headers, agent: false }, (answer) => {
    const back: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) back[name] = value;
    res.writeHead(answer.statusCode ?? 502, answer.statusMessage, back);
    answer.pipe(res);
  });
  upstream.on("socket", track);
  upstream.once("error", (error) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" }).end(`Veil sandbox proxy: ${host}:${port}: ${error.message}\n`);
    else res.destroy();
  });
  req.pipe(upstream);
}
